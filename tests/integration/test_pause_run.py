"""End to end: pause, resume and run now one run through the pool, on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import Pending, RunContext, RunNotFoundError, RunStateError, Workpool


async def test_a_paused_run_waits_until_resumed(pool: Workpool) -> None:
    @pool.workflow()
    async def double(ctx: RunContext, value: int) -> int:
        return value * 2

    paused = await double.run(1)
    assert (await pool.pause_run(paused.id)).status == "paused"
    assert await paused.status() == Pending(previous_attempts=0, paused=True)
    other = await double.run(2)
    async with fast_worker(pool):
        assert await other.result(timeout=10) == 4
        assert (await pool.get_run(paused.id)).status == "paused"
        await pool.resume_run(paused.id)  # (a worker may claim it before it is read back)
        assert await paused.result(timeout=10) == 2


async def test_run_now_starts_a_scheduled_run_with_its_attempts(pool: Workpool) -> None:
    @pool.workflow()
    async def later(ctx: RunContext, value: int) -> int:
        return ctx.attempt

    handle = await later.run(0, run_after=timedelta(hours=1))
    assert (await pool.run_now(handle.id)).status == "queued"
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == 1


async def test_refusals_say_what_state_the_run_is_in(pool: Workpool) -> None:
    @pool.workflow()
    async def job(ctx: RunContext, value: int) -> None:
        return None

    handle = await job.run(0)
    with pytest.raises(RunStateError, match=r"run .* is queued: only a scheduled run"):
        await pool.run_now(handle.id)
    with pytest.raises(RunStateError, match="is queued: only a paused run can be resumed"):
        await pool.resume_run(handle.id)
    async with fast_worker(pool):
        await handle.result(timeout=10)
    with pytest.raises(RunStateError, match="is succeeded: only a queued or scheduled run"):
        await pool.pause_run(handle.id)
    with pytest.raises(RunNotFoundError):
        await pool.pause_run("no-such-run")


def test_sync_twins(backend_url: str) -> None:
    pool = Workpool(backend_url, app="tests")

    @pool.workflow()
    async def job(ctx: RunContext, value: int) -> None:
        return None

    handle = job.run_sync(0, run_after=timedelta(hours=1))
    assert pool.pause_run_sync(handle.id).status == "paused"
    assert pool.resume_run_sync(handle.id).status == "scheduled"
    assert pool.run_now_sync(handle.id).status == "queued"
    pool.close()
