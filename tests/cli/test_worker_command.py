"""The `workpool worker` command, invoked as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workpool", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_help_lists_the_worker_options() -> None:
    result = run_cli("worker", "--help")
    assert result.returncode == 0
    for option in ("--queues", "--concurrency", "--lease-seconds", "--shutdown-grace"):
        assert option in result.stdout


def test_bad_pool_path_is_a_clear_error() -> None:
    result = run_cli("worker", "no_such_module:pool")
    assert result.returncode == 2
    assert "cannot import 'no_such_module'" in result.stderr
    result = run_cli("worker", "tests.integration.process_app:chore")
    assert result.returncode == 2
    assert "is not a Workpool" in result.stderr


def test_unreachable_backend_exits_2_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "workpool", "worker", "tests.integration.process_app:pool"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"WORKPOOL_URL": "redis://127.0.0.1:1/0", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("workpool: ")
