"""A worker past its local lease (stalled between the claim and the handler's start)
starts neither the handler nor the replay of a resumed run, and writes nothing."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from workpool import RunContext, Workpool
from workpool.backends.base import ClaimedRun
from workpool.definitions import Workflow
from workpool.engine.context import context_for
from workpool.engine.environment import StepEnvironment
from workpool.engine.execute import Execution, execute
from workpool.engine.fencing import LocalLease
from workpool.engine.threads import HandlerThreads


async def execute_past_the_lease(
    pool: Workpool, workflow: Workflow[Any, Any], claimed: ClaimedRun
) -> None:
    """Execute ``claimed`` as a worker whose local lease ran out before the start."""
    threads = HandlerThreads("test-handler")
    try:
        env = StepEnvironment(
            pool.registry,
            pool.settings,
            await pool.backend(),
            claimed.lease,
            threads,
            claimed.has_steps,
            local_lease=LocalLease(time.monotonic() - 1),
        )
        ctx = context_for(claimed, env, with_steps=workflow.is_async)
        execution = Execution(threads, time.time, random.Random(), pool.settings.max_payload_bytes)
        await execute(workflow, claimed, ctx, execution)
    finally:
        threads.shutdown(wait=True)


async def claim(pool: Workpool) -> ClaimedRun:
    backend = await pool.backend()
    result = await backend.claim(["default"], "stalled", 1, 20.0, 3, time.time())
    (claimed,) = result.runs
    return claimed


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_handler_does_not_start_past_the_local_lease(pool: Workpool, kind: str) -> None:
    started: list[str] = []

    @pool.workflow(name="tracked_async")
    async def tracked_async(ctx: RunContext, value: int) -> int:
        started.append(ctx.run_id)
        return value

    @pool.workflow(name="tracked_sync")
    def tracked_sync(ctx: RunContext, value: int) -> int:
        started.append(ctx.run_id)
        return value

    workflow = tracked_async if kind == "async" else tracked_sync
    handle = await workflow.run(1)
    claimed = await claim(pool)

    with pytest.raises(asyncio.CancelledError):  # the worker then writes nothing
        await execute_past_the_lease(pool, workflow, claimed)

    assert started == []
    assert (await pool.get_run(handle.id)).status == "running"  # its lease expires


async def test_a_resumed_run_does_not_replay_past_the_local_lease(pool: Workpool) -> None:
    replayed: list[int] = []

    @pool.workflow()
    async def napper(ctx: RunContext, value: int) -> int:
        replayed.append(ctx.attempt)
        await ctx.step.run("first", lambda: value)
        await ctx.step.sleep("nap", 0.6)
        return value

    handle = await napper.run(1)
    backend = await pool.backend()
    async with pool.worker():  # runs the first step, then suspends on the nap
        await _suspended(pool, handle.id)
    assert replayed == [1]
    claimed = await _claim_when_due(pool)
    assert claimed.has_steps

    with pytest.raises(asyncio.CancelledError):
        await execute_past_the_lease(pool, napper, claimed)

    assert replayed == [1]
    assert [step.name for step in await backend.get_steps(handle.id)] == ["first", "nap"]


async def _suspended(pool: Workpool, run_id: str) -> None:
    deadline = time.monotonic() + 20
    while (await pool.get_run(run_id)).status != "suspended":
        assert time.monotonic() < deadline, "the run did not suspend"
        await asyncio.sleep(0.02)


async def _claim_when_due(pool: Workpool) -> ClaimedRun:
    backend = await pool.backend()
    deadline = time.monotonic() + 20
    while True:
        result = await backend.claim(["default"], "stalled", 1, 20.0, 3, time.time())
        if result.runs:
            return result.runs[0]
        assert time.monotonic() < deadline, "the resumed run was not claimable"
        await asyncio.sleep(0.05)
