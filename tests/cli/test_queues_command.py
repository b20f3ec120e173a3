"""The `workpool queues` command, invoked as a user would, against a real backend."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.helpers import workpool


def queues(url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return workpool(url, "queues", *arguments)


def test_pause_resume_and_limit_a_queue(backend_url: str) -> None:
    assert queues(backend_url, "show", "emails").stdout == (
        "queue emails: max_parallelism=no limit, running\n"
    )
    assert queues(backend_url, "set", "emails", "10").stdout == (
        "queue emails: max_parallelism=10, running\n"
    )
    assert queues(backend_url, "pause", "emails").stdout == (
        "queue emails: max_parallelism=10, paused\n"
    )
    assert queues(backend_url, "resume", "emails").stdout == (
        "queue emails: max_parallelism=10, running\n"
    )
    assert queues(backend_url, "set", "emails", "none").stdout == (
        "queue emails: max_parallelism=no limit, running\n"
    )


def test_a_bad_limit_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    result = queues(f"sqlite:///{tmp_path}/q.db", "set", "emails", "many")
    assert result.returncode == 2
    assert "is not a whole number >= 0 or 'none'" in result.stderr


def test_an_unreachable_backend_exits_2_with_one_line() -> None:
    result = queues("redis://127.0.0.1:1/0", "show", "emails")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("workpool: ")
