"""End to end: one worker at a time reports every interval and deletes finished runs
past the pool's retention, on every backend."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import RunContext, RunFailedError, Workpool
from workpool.clock import ManualClock
from workpool.worker.housekeeping import Housekeeper

REPORTED = (
    "completed",
    "succeeded",
    "failed",
    "retries",
    "canceled",
    "running",
    "backlog",
    "failure_rate",
    "permanent_failure_rate",
)


async def test_finished_runs_past_retention_are_deleted(backend_url: str) -> None:
    clock = ManualClock()
    pool = Workpool(backend_url, app="tests", clock=clock, retention=timedelta(minutes=5))

    @pool.workflow(max_concurrency=None)
    async def ping(ctx: RunContext, n: int) -> int:
        return n

    handles = [await ping.run(n) for n in range(5)]
    async with fast_worker(pool):
        for handle in handles:
            assert await handle.result(timeout=10) in range(5)
    kept = await ping.run(99)  # still queued: never deleted
    backend = await pool.backend()
    keeper = Housekeeper(pool.settings, "worker-a", batch=2)

    assert await keeper.step(backend, clock.now()) == 0  # nothing is 5 minutes old yet
    clock.advance(301)
    assert await keeper.step(backend, clock.now()) == 5
    listed = await pool.list_runs()
    assert [run.id for run in listed.runs] == [kept.id]
    await pool.aclose()


async def test_one_housekeeper_at_a_time(pool: Workpool, clock: ManualClock) -> None:
    pool.clock = clock
    backend = await pool.backend()
    first, second = Housekeeper(pool.settings, "worker-a"), Housekeeper(pool.settings, "worker-b")

    assert await first.step(backend, clock.now()) == 0
    assert await second.step(backend, clock.now()) is None  # not leading
    clock.advance(600)  # the first worker died: its lease ran out
    assert await second.step(backend, clock.now()) == 0


async def test_the_report_is_one_structured_event(
    pool: Workpool, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    pool.clock = clock
    clock.advance(60 - clock.now() % 60)

    @pool.workflow(max_concurrency=None, retries=False)
    async def flaky(ctx: RunContext, fail: bool) -> None:
        if fail:
            raise ValueError("no")

    passing, failing = await flaky.run(False), await flaky.run(True)
    await flaky.run(False, run_at=datetime.fromtimestamp(clock.now() + 3600))  # backlog
    async with fast_worker(pool):
        await passing.result(timeout=10)
        with pytest.raises(RunFailedError):
            await failing.result(timeout=10)
    clock.advance(60)
    with caplog.at_level(logging.INFO, logger="workpool.report"):
        await Housekeeper(pool.settings, "worker-a").step(await pool.backend(), clock.now())

    [record] = [r for r in caplog.records if getattr(r, "event", None) == "report"]
    figures = {name: getattr(record, name) for name in REPORTED}
    assert figures == {
        "completed": 2,
        "succeeded": 1,
        "failed": 1,
        "retries": 0,
        "canceled": 0,
        "running": 0,
        "backlog": 1,
        "failure_rate": 0.5,
        "permanent_failure_rate": 0.5,
    }
