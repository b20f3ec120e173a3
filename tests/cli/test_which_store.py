"""Which store am I using? A worker names its store when it starts, and an inspection
command pointed at a SQLite file that does not exist says so instead of creating one.

The default SQLite URL is relative to the current directory, so a web process and a
worker started in different directories used two stores without a word.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from tests.cli.helpers import ROOT
from tests.redis_server import RedisServer
from workpool import Workpool

START_DEADLINE = 30.0
"""Seconds a worker process gets to log its start line."""


def environment(url: str | None) -> dict[str, str]:
    """The test's environment with $WORKPOOL_URL set to ``url`` (None: unset), the
    workpool sources and this repository importable from any directory."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("WORKPOOL_URL", None)
    env.pop("COLUMNS", None)
    if url is not None:
        env["WORKPOOL_URL"] = url
    return env


def workpool_in(
    directory: Path, url: str | None, *arguments: str
) -> subprocess.CompletedProcess[str]:
    """``workpool ARGUMENTS`` run from ``directory`` with $WORKPOOL_URL set to ``url``."""
    return subprocess.run(
        [sys.executable, "-m", "workpool", *arguments],
        cwd=directory,
        env=environment(url),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def worker_start_line(directory: Path, url: str | None) -> str:
    """Start ``workpool worker`` for the test app from ``directory`` on ``url`` (None:
    $WORKPOOL_URL unset), wait (with a deadline) for its start line, stop it with
    SIGTERM and return that line."""
    stderr_path = directory / "worker.stderr"
    env = environment(url)
    env["WORKPOOL_TEST_LOG"] = os.devnull
    target = "tests.integration.process_app:pool"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "workpool", "worker", target, "--concurrency", "1"],
            cwd=directory,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + START_DEADLINE
        while True:
            lines = stderr_path.read_text().splitlines()
            started = [line for line in lines if "started on queues" in line]
            if started:
                return started[0]
            assert process.poll() is None, f"the worker exited:\n{stderr_path.read_text()}"
            assert time.monotonic() < deadline, f"no start line:\n{stderr_path.read_text()}"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def test_the_worker_start_line_names_a_relative_sqlite_file_by_its_absolute_path(
    tmp_path: Path,
) -> None:
    line = worker_start_line(tmp_path, "sqlite:///shop.db")
    assert line.endswith(f"store sqlite:///{tmp_path / 'shop.db'}"), line
    assert (tmp_path / "shop.db").exists()  # the worker creates the store it names


def test_the_worker_start_line_names_the_default_store_too(tmp_path: Path) -> None:
    line = worker_start_line(tmp_path, None)
    assert line.endswith(f"store sqlite:///{tmp_path / 'workpool.db'}"), line


def test_the_worker_start_line_names_a_redis_store_without_its_password(tmp_path: Path) -> None:
    with RedisServer() as server:  # of its own: it is given a password
        admin = redis.Redis.from_url(server.url)
        admin.config_set("requirepass", "s3cret")
        admin.close()
        with_password = server.url.replace("redis://", "redis://default:s3cret@")
        line = worker_start_line(tmp_path, with_password)
    assert line.endswith(f"store {server.url} (prefix workpool)"), line
    assert "s3cret" not in line
    assert "default" not in line.partition("store")[2]


INSPECTIONS = [
    ("runs", "list"),
    ("runs", "show", "0190-no-such-run"),
    ("runs", "cancel", "0190-no-such-run"),
    ("runs", "retry", "0190-no-such-run"),
    ("steps", "0190-no-such-run"),
    ("stats",),
    ("workflows",),
    ("queues",),
    ("queues", "show", "default"),
    ("queues", "pause", "default"),
    ("queues", "resume", "default"),
    ("queues", "set", "default", "3"),
]


@pytest.mark.parametrize("command", INSPECTIONS, ids=[" ".join(c) for c in INSPECTIONS])
def test_a_command_on_a_missing_sqlite_file_says_so_and_creates_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    (tmp_path / "web").mkdir()  # the folder exists, the file does not
    missing = tmp_path / "web" / "workpool.db"
    expected = f"workpool: no workpool database at {missing}; check --url / $WORKPOOL_URL\n"
    result = workpool_in(tmp_path, "sqlite:///web/workpool.db", *command)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", expected), result
    assert list((tmp_path / "web").iterdir()) == []


def test_a_missing_folder_is_a_missing_database_too(tmp_path: Path) -> None:
    result = workpool_in(tmp_path, "sqlite:///web/workpool.db", "runs", "list")
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr == (
        f"workpool: no workpool database at {tmp_path / 'web' / 'workpool.db'}; "
        "check --url / $WORKPOOL_URL\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_default_url_names_the_file_in_the_current_directory(tmp_path: Path) -> None:
    result = workpool_in(tmp_path, None, "runs", "list")
    assert result.returncode == 1, result
    assert result.stderr == (
        f"workpool: no workpool database at {tmp_path / 'workpool.db'}; "
        "check --url / $WORKPOOL_URL\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_url_option_is_checked_like_the_environment(tmp_path: Path) -> None:
    missing = tmp_path / "elsewhere.db"
    result = workpool_in(tmp_path, None, "stats", "--url", f"sqlite:///{missing}")
    assert result.returncode == 1, result
    assert f"no workpool database at {missing};" in result.stderr
    assert not missing.exists()


async def test_a_command_on_a_store_the_library_created_reads_it(tmp_path: Path) -> None:
    pool = Workpool(f"sqlite:///{tmp_path}/shop.db")
    await pool.stats()  # the library creates the file it is pointed at
    await pool.aclose()
    result = workpool_in(tmp_path, "sqlite:///shop.db", "runs", "list")
    assert (result.returncode, result.stderr) == (0, ""), result
    assert "no runs" in result.stdout
