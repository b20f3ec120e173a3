"""The `workpool worker` command, invoked as a user would."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.integration import process_app
from workpool import Workpool

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


async def test_json_log_format_writes_one_parsable_line_per_event(backend_url: str) -> None:
    env = {
        **os.environ,
        "WORKPOOL_URL": backend_url,
        "PYTHONPATH": str(ROOT / "src"),
        "WORKPOOL_TEST_LOG": os.devnull,
    }
    command = ["-m", "workpool", "worker", "tests.integration.process_app:pool"]
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        "--log-format",
        "json",
        cwd=ROOT,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        pool = Workpool(backend_url)
        (handle,) = await pool.enqueue_many([process_app.chore.prepare(1)])
        assert await handle.result(timeout=30) == 1
        await pool.aclose()
    finally:
        worker.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(worker.communicate(), 30)
    documents = [json.loads(line) for line in stderr.decode().splitlines() if line.strip()]
    events = {doc["event"]: doc for doc in documents if doc.get("run_id") == handle.id}
    assert set(events) == {"started", "completed"}
    assert events["completed"]["outcome"] == "success"
    assert events["completed"]["workflow"] == "chore"
    assert events["started"]["queue"] == "default"
