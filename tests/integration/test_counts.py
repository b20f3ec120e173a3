"""What a reader sees of a run while it goes: attempts that never go back, executions,
the time it ran in all, and why it waits."""

from __future__ import annotations

import asyncio

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import Pending, RunContext, Running, Workpool


async def test_attempts_never_go_back_while_a_run_waits_durably(pool: Workpool) -> None:
    resting = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def napper(ctx: RunContext, _: None) -> str:
        await ctx.step.run("before", lambda: "ok")
        resting.set()
        await ctx.step.sleep("rest", 0.6)
        return "rested"

    handle = await napper.run(None)
    seen = [(await pool.get_run(handle.id)).attempts]
    async with fast_worker(pool):
        await asyncio.wait_for(resting.wait(), timeout=10)

        async def suspended() -> bool:
            return (await pool.get_run(handle.id)).status == "suspended"

        await wait_until(suspended)
        seen.append((await pool.get_run(handle.id)).attempts)
        assert await handle.status() == Running(previous_attempts=0)
        assert await handle.result(timeout=10) == "rested"
    run = await pool.get_run(handle.id)
    assert [*seen, run.attempts] == [0, 1, 1]
    assert run.executions == 2
    assert run.run_time.total_seconds() > 0
    assert run.run_time < run.finished_at - run.created_at  # type: ignore[operator]


async def test_a_run_waiting_for_its_workflows_one_place_says_so(pool: Workpool) -> None:
    release = asyncio.Event()

    @pool.workflow()  # max_concurrency=1 by default: one run at a time
    async def invoice(ctx: RunContext, number: int) -> int:
        await release.wait()
        return number

    first, second = await invoice.run(1), await invoice.run(2)
    async with fast_worker(pool):

        async def first_running() -> bool:
            return (await pool.get_run(first.id)).status == "running"

        await wait_until(first_running)
        waiting = await pool.get_run(second.id)
        reason = await pool.waiting_reason(waiting)
        assert await second.status() == Pending(previous_attempts=0)
        release.set()
        assert await second.result(timeout=10) == 2
    expected = (
        "waiting: workflow 'invoice' is at max_concurrency 1 (runs of it start as others end)"
    )
    assert (waiting.status, waiting.waiting, reason) == ("queued", expected, expected)
    assert (await pool.get_run(second.id)).waiting is None
