"""``workpool worker --processes N``: one supervisor, N worker processes, real processes
on both backends. A killed process is started again, SIGTERM drains them all, a
process that cannot start stops the supervisor, and ``--max-runs-per-process``
recycles them; no run is lost or run twice."""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.integration import process_app
from tests.integration.processes import Workers, alive, children_of
from tests.polling import wait_until
from workpool import RunFailedError, RunHandle, Workpool
from workpool.worker.supervisor import RestartPolicy, Supervisor

QUICK = ("--lease-seconds", "1", "--renew-seconds", "0.2", "--shutdown-grace", "10")


async def serving(pool: Workpool, supervisor: subprocess.Popen[bytes], count: int) -> set[int]:
    """Wait until ``count`` worker processes of ``supervisor`` serve (each wrote its
    heartbeat); return their pids."""
    found: set[int] = set()

    async def enough() -> bool:
        nonlocal found
        announced = {int(record.id.split(":")[-2]) for record in await pool.live_workers()}
        found = announced & children_of(supervisor.pid)
        return len(found) >= count

    await wait_until(enough)
    return found


async def two_processes(
    workers: Workers, pool: Workpool, *options: str
) -> tuple[subprocess.Popen[bytes], set[int]]:
    """A supervisor of two processes with ``options``, and their pids once both serve."""
    supervisor = workers.start("--processes", "2", *options, *QUICK)
    return supervisor, await serving(pool, supervisor, 2)


async def stop(supervisor: subprocess.Popen[bytes]) -> int:
    """SIGTERM the supervisor; its exit status."""
    supervisor.send_signal(signal.SIGTERM)
    return await asyncio.to_thread(supervisor.wait, 30)


def by_run(rows: list[list[str]]) -> dict[str, list[str]]:
    """run id -> the pids of its log lines (rows of ``start`` or ``done``)."""
    pids: dict[str, list[str]] = collections.defaultdict(list)
    for run_id, _attempt, pid in rows:
        pids[run_id].append(pid)
    return pids


async def check_each_ran_once(
    pool: Workpool, workers: Workers, handles: list[RunHandle[float]]
) -> None:
    """Every run succeeded, executed once, and its handler ended once."""
    done = by_run(workers.lines("done"))
    for handle in handles:
        run = await pool.get_run(handle.id)
        assert (run.status, run.executions) == ("succeeded", 1), run
        assert len(done[handle.id]) == 1


@pytest.mark.slow
async def test_sigterm_drains_every_process_and_no_run_is_lost_or_run_twice(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    supervisor, children = await two_processes(workers, pool, "--concurrency", "4")
    handles = await pool.enqueue_many([process_app.steady.prepare(1.0) for _ in range(8)])
    await wait_until(lambda: len(workers.lines("start")) == 8)  # every slot of both is busy
    assert {row[2] for row in workers.lines("start")} == set(map(str, children))
    assert await stop(supervisor) == 0, workers.errors()
    assert not any(alive(pid) for pid in children)
    await check_each_ran_once(pool, workers, handles)  # in flight, and finished
    assert await pool.live_workers() == []  # each process said goodbye
    await pool.aclose()


@pytest.mark.slow
async def test_a_killed_process_is_started_again_and_its_runs_finish(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    supervisor, first = await two_processes(workers, pool, "--concurrency", "4")
    handles = await pool.enqueue_many([process_app.steady.prepare(0.2) for _ in range(30)])
    await wait_until(lambda: {row[2] for row in workers.lines("start")} == set(map(str, first)))
    victim = min(first)
    os.kill(victim, signal.SIGKILL)
    await wait_until(lambda: not alive(victim))
    replacement = await serving(pool, supervisor, 2) - first
    assert len(replacement) == 1, "a new process took the place of the killed one"
    for handle in handles:
        await handle.result(timeout=30)
    started, done = by_run(workers.lines("start")), by_run(workers.lines("done"))
    interrupted = 0
    for handle in handles:
        run = await pool.get_run(handle.id)
        assert run.status == "succeeded"
        if run.executions == 1:
            assert len(started[handle.id]) == len(done[handle.id]) == 1
        else:  # the killed process held it (maybe before its handler began): it ran again
            assert run.executions == 2
            assert any(pid != str(victim) for pid in done[handle.id])
            interrupted += 1
    assert interrupted <= 8  # at most what the killed process held (2 per slot)
    assert await stop(supervisor) == 0, workers.errors()
    await pool.aclose()


@pytest.mark.slow
async def test_max_runs_per_process_recycles_the_processes(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    # --no-claim-ahead: a flag, passed on to each process as it was given.
    options = ("--processes", "2", "--max-runs-per-process", "5", "--concurrency", "2")
    supervisor = workers.start(*options, "--no-claim-ahead", *QUICK)
    handles = await pool.enqueue_many([process_app.steady.prepare(0.05) for _ in range(20)])
    for handle in handles:
        await handle.result(timeout=30)
    runs_per_process = collections.Counter(row[2] for row in workers.lines("start"))
    assert len(runs_per_process) >= 4
    assert max(runs_per_process.values()) <= 5
    await check_each_ran_once(pool, workers, handles)
    assert await stop(supervisor) == 0, workers.errors()
    await pool.aclose()


@pytest.mark.parametrize("backend_name", ["sqlite"])
async def test_the_processes_stop_when_their_supervisor_is_killed_and_each_serves_metrics(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    port = two_free_ports()
    metrics = ("--metrics-port", str(port), "--metrics-host", "127.0.0.1")
    supervisor, children = await two_processes(workers, pool, *metrics)
    for each in (port, port + 1):  # process i serves port + i - 1
        assert "workpool_runs_started_total" in await asyncio.to_thread(scrape, each)
    supervisor.kill()
    supervisor.wait()
    await wait_until(lambda: not any(alive(pid) for pid in children))
    assert await pool.live_workers() == []  # they stopped gracefully
    await pool.aclose()


@pytest.mark.parametrize("backend_name", ["sqlite"])
async def test_a_process_recycled_while_a_sync_handler_runs_on_is_replaced_at_once(
    workers: Workers, backend_url: str, tmp_path: Path
) -> None:
    pool = Workpool(backend_url)
    log = tmp_path / "supervisor.log"
    options = ("--max-runs-per-process", "1", "--shutdown-grace", "0.2", "--log-level", "INFO")
    workers.start(*options, stderr=log)
    (handle,) = await pool.enqueue_many([process_app.sleepy.prepare(30)])
    # Its thread cannot be stopped: the run is handed back after the grace, and the
    # process exits past the thread with the recycling status all the same.
    await wait_until(lambda: "(pid " in log.read_text() and "was recycled" in log.read_text())
    await workers.wait_for_line("start", handle.id, count=2)  # taken by the new process
    await handle.cancel()
    await pool.aclose()


@pytest.mark.parametrize("backend_name", ["sqlite"])
async def test_a_process_that_abandoned_a_timed_out_thread_is_replaced(
    workers: Workers, backend_url: str, tmp_path: Path
) -> None:
    pool = Workpool(backend_url)
    log = tmp_path / "supervisor.log"
    supervisor = workers.start("--max-runs-per-process", "100", "--log-level", "INFO", stderr=log)
    (first,) = await serving(pool, supervisor, 1)
    (handle,) = await pool.enqueue_many([process_app.overdue.prepare(30)])
    with pytest.raises(RunFailedError, match="RunTimeoutError"):
        await handle.result(timeout=30)
    await wait_until(lambda: "a sync handler's thread was abandoned" in log.read_text())
    await wait_until(lambda: not alive(first))  # the thread died with its process
    await serving(pool, supervisor, 1)  # and another one serves
    (after,) = await pool.enqueue_many([process_app.chore.prepare(1)])
    assert await after.result(timeout=30) == 1
    await pool.aclose()


@pytest.mark.parametrize("backend_name", ["sqlite"])
async def test_a_second_sigterm_kills_the_processes_at_once(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    supervisor, children = await two_processes(workers, pool, "--shutdown-grace", "60")
    (handle,) = await pool.enqueue_many([process_app.steady.prepare(60)])
    await workers.wait_for_line("start", handle.id)
    supervisor.send_signal(signal.SIGTERM)  # the process that holds the run waits for it
    await wait_until(lambda: sum(alive(pid) for pid in children) == 1)
    assert await stop(supervisor) == 1  # a second time: killed, not drained
    assert not any(alive(pid) for pid in children)
    run = await pool.get_run(handle.id)
    assert (run.status, run.executions) == ("running", 1)  # until its lease expires
    await pool.aclose()


async def test_a_pool_that_fails_at_import_stops_the_supervisor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The real worker command of a broken module, with short delays between restarts
    # (by default 1, 2, 4 and 8 s: 15 s before the fifth start).
    command = [sys.executable, "-m", "workpool", "worker", "tests.integration.broken_app:pool"]
    quick = RestartPolicy(first_delay=0.05, longest_delay=0.1)
    supervisor = Supervisor(lambda index: command, 2, shutdown_grace=1, policy=quick)
    with caplog.at_level(logging.INFO, logger="workpool.supervisor"):
        status = await asyncio.wait_for(supervisor.run(), timeout=40)
    assert status == 1
    assert "exited with status 1 before it started, 5 times in a row; stopping" in caplog.text
    assert "starting it again in 0 s" in caplog.text


def two_free_ports() -> int:
    """A port P such that P and P + 1 are free now."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
        with socket.socket() as second:
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise AssertionError("no two consecutive free ports")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
        return text
