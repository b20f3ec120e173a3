"""A worker asked to recycle (``request_recycle``, or ``max_runs`` reached) stops
claiming, lets the runs it holds finish, and returns from ``run()``."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from tests.polling import wait_until
from workpool import ConfigurationError, RunContext, Workpool


async def test_max_runs_starts_that_many_runs_then_returns(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def chore(ctx: RunContext, number: int) -> int:
        await asyncio.sleep(0.05)
        return number

    handles = await pool.enqueue_many([chore.prepare(n) for n in range(7)])
    worker = pool.worker(concurrency=4, max_runs=3, renew_every=timedelta(milliseconds=100))
    await asyncio.wait_for(worker.run(), timeout=20)  # returns by itself
    runs = [await pool.get_run(handle.id) for handle in handles]
    assert sorted(run.status for run in runs) == ["queued"] * 4 + ["succeeded"] * 3
    assert all(run.executions == (run.status == "succeeded") for run in runs)
    assert worker.recycle_reason == "it started 3 runs (max_runs=3)"
    assert await pool.live_workers() == []  # it said goodbye, as on a stop


async def test_request_recycle_lets_held_runs_finish(pool: Workpool) -> None:
    release = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def held(ctx: RunContext, number: int) -> int:
        await release.wait()
        return number

    first, second = await pool.enqueue_many([held.prepare(1), held.prepare(2)])
    worker = pool.worker(concurrency=1, renew_every=timedelta(milliseconds=100))
    running = asyncio.create_task(worker.run())
    await worker.started.wait()
    await wait_until(lambda: _status(pool, first.id, "running"))
    worker.request_recycle("a test asked")
    worker.request_recycle("a second reason")  # the first one is kept
    await asyncio.sleep(0.2)
    assert not running.done()  # it waits for its run, as a stop does
    release.set()
    await asyncio.wait_for(running, timeout=20)
    assert worker.recycle_reason == "a test asked"
    assert (await pool.get_run(first.id)).status == "succeeded"
    assert (await pool.get_run(second.id)).status == "queued"


async def test_a_stopped_worker_is_not_recycled(pool: Workpool) -> None:
    worker = pool.worker()
    running = asyncio.create_task(worker.run())
    await worker.started.wait()
    worker.stop()
    worker.request_recycle("too late: it is stopping")
    await asyncio.wait_for(running, timeout=20)
    assert worker.recycle_reason is None


def test_max_runs_must_be_positive(pool: Workpool) -> None:
    with pytest.raises(ConfigurationError, match="max_runs must be a whole number from 1 to"):
        pool.worker(max_runs=0)


async def _status(pool: Workpool, run_id: str, status: str) -> bool:
    return (await pool.get_run(run_id)).status == status
