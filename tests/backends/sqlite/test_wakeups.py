"""Idle workers in other processes are woken by commits, not by their poll.

Each worker process (``idle_worker.py``) waits up to a minute when idle, so a run that
starts within seconds was started by a wake-up.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.backends.sqlite.idle_worker import APP, IDLE_WAIT, define_note
from tests.polling import wait_until

from workpool import Workpool
from workpool.backends.base import NewRun
from workpool.backends.sqlite.backend import SQLiteBackend

ROOT = Path(__file__).resolve().parents[3]
STARTS_WITHIN = 10.0
"""Seconds a run may take to start: generous for a loaded machine, far below the
minute an idle worker waits when nothing wakes it."""

pytestmark = pytest.mark.slow


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "workpool.db"


@pytest.fixture
def workers(database: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def start_worker(
    started: list[subprocess.Popen[bytes]], database: Path, *extra: str
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tests.backends.sqlite.idle_worker", url_of(database)]
    process = subprocess.Popen([*command, *extra], cwd=ROOT, stderr=subprocess.DEVNULL)
    started.append(process)
    return process


def url_of(database: Path) -> str:
    return f"sqlite:///{database}"


def announced(database: Path) -> set[str]:
    """The listener addresses announced in the store (none before it exists)."""
    if not database.exists():
        return set()
    with sqlite3.connect(database) as connection:
        try:
            rows = connection.execute("SELECT address FROM wakeups").fetchall()
        except sqlite3.OperationalError:  # not migrated yet
            return set()
    connection.close()
    return {row[0] for row in rows}


async def test_a_run_enqueued_by_another_process_starts_long_before_the_idle_wait_ends(
    database: Path, workers: list[subprocess.Popen[bytes]]
) -> None:
    start_worker(workers, database)
    await wait_until(lambda: announced(database))  # idle, and listening
    pool = Workpool(url_of(database), app=APP)
    note = define_note(pool)

    for value in range(3):  # each after the worker went back to its idle wait
        handle = await note.run(value)
        assert await handle.result(timeout=STARTS_WITHIN) == value

    await pool.aclose()


async def test_without_a_listener_a_wait_ends_by_polling_soon_after_a_commit(
    database: Path,
) -> None:
    # As where no listener can be had (no abstract unix sockets): the wait polls.
    waiter = await SQLiteBackend.open(database, listen=False)
    enqueuer = await SQLiteBackend.open(database)
    now = time.time()
    assert not (await waiter.claim(["q"], "worker", 10, 30.0, 3, now)).runs
    waiting = asyncio.create_task(waiter.wait_for_work(["q"], IDLE_WAIT.total_seconds()))

    await enqueuer.enqueue(
        [NewRun(id="r1", workflow="wf", queue="q", input="1", available_at=now)], now
    )

    await asyncio.wait_for(waiting, STARTS_WITHIN)
    await enqueuer.close()
    await waiter.close()


async def test_a_killed_worker_leaves_nothing_that_stops_the_next_one(
    database: Path, workers: list[subprocess.Popen[bytes]]
) -> None:
    first = start_worker(workers, database)
    await wait_until(lambda: announced(database))
    [dead] = announced(database)
    first.send_signal(signal.SIGKILL)
    first.wait()
    start_worker(workers, database)
    await wait_until(lambda: len(announced(database)) == 2)
    pool = Workpool(url_of(database), app=APP)
    note = define_note(pool)

    first_run = await note.run(1)  # its sender is refused by the dead worker's address
    assert await first_run.result(timeout=STARTS_WITHIN) == 1
    second_run = await note.run(2)  # and its next transaction forgets that address

    assert await second_run.result(timeout=STARTS_WITHIN) == 2
    assert dead not in announced(database)
    assert len(announced(database)) == 1
    await pool.aclose()
