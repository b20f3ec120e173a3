"""A scheduled run starts on time, also right after runs that used durable sleeps (a
reported defect on Redis, 2 s late in 2 of 3 trials, that these runs did not show)."""

from __future__ import annotations

import time

from tests.integration.conftest import fast_worker
from workpool import RunContext, Workpool

LATE_ENOUGH_TO_FAIL = 1.0
"""Seconds: the report saw about 2 s; a loaded machine adds far less than this."""


async def test_a_scheduled_run_starts_on_time_after_durable_sleeps(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def napper(ctx: RunContext, seconds: float) -> str:
        await ctx.step.sleep("nap", seconds)
        await ctx.step.sleep("nap again", seconds)
        return "rested"

    @pool.workflow(max_concurrency=None)
    async def stamp(ctx: RunContext, _: None) -> float:
        return time.time()

    async with fast_worker(pool):
        naps = [await napper.run(0.6) for _ in range(3)]
        for nap in naps:
            assert await nap.result(timeout=20) == "rested"
        due = time.time() + 1.5
        scheduled = await stamp.run(None, run_after=1.5)
        started = await scheduled.result(timeout=20)
    assert due <= started < due + LATE_ENOUGH_TO_FAIL
