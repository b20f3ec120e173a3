"""Batches and debounce across real processes, on both backends: a batch's callback under
a 3-process worker whose processes are SIGKILLed mid-batch, and debounced enqueues from
two processes at once."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.integration import batch_app
from tests.integration.processes import ROOT, Workers, children_of
from tests.polling import wait_until
from workpool import Workpool

APP = "tests.integration.batch_app:pool"
QUICK = ("--lease-seconds", "1", "--renew-seconds", "0.2", "--concurrency", "20")
ITEMS = 300


def kill_one(supervisor: subprocess.Popen[bytes]) -> int:
    """SIGKILL one worker process of the supervisor (it starts another); its pid."""
    victim = min(children_of(supervisor.pid))
    os.kill(victim, signal.SIGKILL)
    return victim


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_the_callback_runs_once_when_workers_are_killed_mid_batch(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url, app="batches")
    supervisor = workers.start("--processes", "3", *QUICK, app=APP)
    await wait_until(lambda: len(children_of(supervisor.pid)) == 3)
    batch = await pool.batch(
        [batch_app.item.prepare(number) for number in range(ITEMS)],
        on_complete=batch_app.summary,
    )
    killed = []
    for progress in (ITEMS // 4, ITEMS // 2):
        await wait_until(lambda p=progress: len(workers.lines("item")) >= p, limit=60)
        killed.append(kill_one(supervisor))
        await wait_until(lambda: len(children_of(supervisor.pid)) == 3, limit=60)

    status = await batch.wait(timeout=120)
    await wait_until(lambda: workers.lines("summary"), limit=60)
    await asyncio.sleep(1.0)  # a second callback, if there were one, would run by now

    bad = len(range(0, ITEMS, 25))
    assert (status.total, status.succeeded, status.failed, status.canceled) == (
        ITEMS,
        ITEMS - bad,
        bad,
        0,
    )
    [summary] = workers.lines("summary")
    run_id, batch_id, *counts, _pid = summary
    assert (run_id, batch_id) == (f"{batch.id}-complete", batch.id)
    assert [int(count) for count in counts] == [ITEMS, ITEMS - bad, bad, 0, bad]
    executed = collections.Counter(row[0] for row in workers.lines("item"))
    assert len(executed) == ITEMS
    assert sum(executed.values()) > ITEMS  # the killed processes' runs ran again
    assert {row[2] for row in workers.lines("item")} & {str(pid) for pid in killed}
    await pool.aclose()


def enqueuer(role: str, bursts: int, workers: Workers) -> subprocess.Popen[bytes]:
    """A debounce_enqueuer process; it starts its bursts once its standard input says when."""
    env = {**os.environ, "WORKPOOL_URL": workers.url, "WORKPOOL_TEST_LOG": str(workers.log_path)}
    command = [sys.executable, "-m", "tests.integration.debounce_enqueuer", role, str(bursts)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.PIPE)


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_debounced_enqueues_from_two_processes_make_one_run_per_quiet_window(
    workers: Workers, backend_url: str
) -> None:
    bursts = 2
    pool = Workpool(backend_url, app="batches")
    workers.start(*QUICK, app=APP)
    processes = [enqueuer(role, bursts, workers) for role in ("first", "last")]
    await wait_until(lambda: len(workers.lines("ready")) == 2, limit=60)
    await wait_until(pool.live_workers, limit=60)  # a worker serves: it takes each window's run
    start = f"{time.time() + 0.5!r}\n".encode()  # both go at once, whatever their start took
    for process in processes:
        assert process.stdin is not None
        process.stdin.write(start)
        process.stdin.close()
    for process in processes:
        assert await asyncio.to_thread(process.wait, 60) == 0
    await pool.aclose()

    await wait_until(lambda: len(workers.lines("refresh")) >= bursts, limit=30)
    await asyncio.sleep(1.5)  # a second run of a window, if there were one, would run by now

    enqueued = workers.lines("enqueued")
    assert len(enqueued) == bursts * 31
    runs_of_burst: dict[int, set[str]] = collections.defaultdict(set)
    for _role, burst, _sequence, enqueued_id in enqueued:
        runs_of_burst[int(burst)].add(enqueued_id)
    assert all(len(runs) == 1 for runs in runs_of_burst.values()), runs_of_burst
    ran = {run_id: json.loads(change) for run_id, change, _pid in workers.lines("refresh")}
    assert len(workers.lines("refresh")) == len(ran) == bursts
    for number, (run_id,) in sorted(runs_of_burst.items()):
        assert ran[run_id] == {"role": "last", "burst": number, "sequence": "final"}, number
