"""An outcome the backend refuses fails its own run and never holds up the others.

A batch of outcomes whose write fails (for another reason than an unreachable
backend) is written entry by entry: the good entries are stored, an entry that still
cannot be written becomes a permanent failure of its run with a clear error, and one
whose failure cannot be written either is dropped and logged (its lease expires).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import RetryPolicy, RunContext, RunFailedError, Workpool
from workpool.backends.base import ClaimedRun, Finish, Lease
from workpool.engine.execute import Execution
from workpool.engine.threads import HandlerThreads
from workpool.worker.active import ActiveRun, ActiveRuns
from workpool.worker.finisher import Finisher

QUICK_RETRY = RetryPolicy(max_attempts=3, initial_backoff=timedelta(milliseconds=10))


class PoisonableClock:
    """The system clock, except that the first read after ``poison()`` returns NaN."""

    def __init__(self) -> None:
        self._poisoned = False

    def poison(self) -> None:
        self._poisoned = True

    def now(self) -> float:
        if self._poisoned:
            self._poisoned = False
            return math.nan
        return time.time()


@pytest.fixture
async def poisonable(backend_url: str) -> AsyncIterator[tuple[Workpool, PoisonableClock]]:
    """A pool whose clock can be made to return NaN once."""
    clock = PoisonableClock()
    pool = Workpool(backend_url, app="tests", clock=clock)
    yield pool, clock
    await pool.aclose()


async def test_a_nan_retry_time_fails_its_run_and_the_others_are_written(
    poisonable: tuple[Workpool, PoisonableClock],
) -> None:
    pool, clock = poisonable
    started: set[int] = set()
    all_started, release = asyncio.Event(), asyncio.Event()

    @pool.workflow(max_concurrency=None, retries=QUICK_RETRY)
    async def job(ctx: RunContext, value: int) -> int:
        started.add(value)
        if len(started) == 5:
            all_started.set()
        await release.wait()
        if value == 0:
            clock.poison()  # the next read of the clock is this failure's retry time
            raise ValueError("the first attempt fails")
        return value

    handles = [await job.run(value) for value in range(5)]
    async with fast_worker(pool):
        async with asyncio.timeout(10):
            await all_started.wait()
        release.set()  # all five end together: their outcomes share a batch
        assert [await handle.result(timeout=10) for handle in handles[1:]] == [1, 2, 3, 4]
        with pytest.raises(RunFailedError) as failed:
            await handles[0].result(timeout=10)
        assert await (await job.run(5)).result(timeout=10) == 5  # the finisher goes on
    message = failed.value.error.message
    assert "could not store this outcome" in message
    assert "retry_at" in message
    assert "the first attempt fails" in message
    assert len((await pool.list_runs()).runs) == 6
    stats = await pool.stats()
    assert (stats.total.pending, stats.total.running, stats.total.failed) == (0, 0, 1)


async def test_a_refused_batch_is_written_entry_by_entry(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    @pool.workflow(max_concurrency=None)
    async def job(ctx: RunContext, value: int) -> int:
        return value

    handles = [await job.run(value) for value in range(3)]
    backend = await pool.backend()
    claimed = (await backend.claim(["default"], "test", 3, 30.0, 3, pool.clock.now())).runs
    order = {handle.id: position for position, handle in enumerate(handles)}
    first, bad, last = sorted(claimed, key=lambda run: order[run.lease.run_id])
    phantom = replace(first, lease=Lease("phantom \ud800", "token"))  # cannot even be sent
    handler_error = json.dumps({"type": "ValueError", "message": "boom", "traceback": None})
    batch = [
        (first, Finish(first.lease, "succeeded", output="0")),
        (bad, Finish(bad.lease, "retry", error=handler_error, retry_at=math.nan)),
        (phantom, Finish(phantom.lease, "succeeded", output="9")),
        (last, Finish(last.lease, "succeeded", output="2")),
    ]
    active = ActiveRuns()
    with HandlerThreads() as threads:
        env = Execution(threads, pool.clock.now, random.Random(), pool.max_payload_bytes)
        finisher = Finisher(backend, active, pool.registry, pool.settings, env, lambda: None)
        for claimed_run, finish in batch:
            await hand_over(finisher, active, claimed_run, finish)
        writer = asyncio.create_task(finisher.run())
        with caplog.at_level(logging.ERROR, logger="workpool.worker"):
            async with asyncio.timeout(10):
                await finisher.drain()
        writer.cancel()

    assert await handles[0].result(timeout=1) == 0
    assert await handles[2].result(timeout=1) == 2
    with pytest.raises(RunFailedError, match="could not store this outcome") as failed:
        await handles[1].result(timeout=1)
    assert "retry_at" in failed.value.error.message
    assert "boom" in failed.value.error.message
    assert len(active) == 0  # the phantom too: its lease is no longer renewed
    dropped = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert any("phantom" in record.getMessage() for record in dropped)


async def hand_over(
    finisher: Finisher, active: ActiveRuns, claimed: ClaimedRun, finish: Finish
) -> None:
    """Track a claimed run as a worker does and queue its outcome for the finisher."""

    async def outcome() -> Finish:
        return finish

    task = asyncio.create_task(outcome())
    await task
    ctx = RunContext(
        claimed.lease.run_id, claimed.workflow, claimed.queue, 1, logging.getLogger("test")
    )
    entry = ActiveRun(claimed, ctx, task)
    active.add(entry)
    finisher.handler_done(entry, task)
