"""End to end: cancel pending and running runs, on every backend."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import RetryPolicy, RunCanceledError, RunContext, RunNotFoundError, Workpool


async def test_cancel_pending_run_never_starts(pool: Workpool) -> None:
    started: list[int] = []

    @pool.workflow()
    async def job(ctx: RunContext, value: int) -> int:
        started.append(value)
        return value

    queued = await job.run(1)
    scheduled = await job.run(2, run_after=timedelta(milliseconds=200))
    assert await pool.cancel(queued.id, "not needed") == "canceled"
    await scheduled.cancel()
    async with fast_worker(pool):
        await asyncio.sleep(0.5)
    assert started == []
    assert (await pool.get_run(queued.id)).status == "canceled"
    assert (await pool.get_run(queued.id)).cancel_reason == "not needed"
    with pytest.raises(RunCanceledError):
        await scheduled.result(timeout=1)


async def test_cancel_interrupts_a_running_async_handler(pool: Workpool) -> None:
    entered = asyncio.Event()
    cleaned_up: list[bool] = []

    @pool.workflow(retries=RetryPolicy(max_attempts=5))
    async def endless(ctx: RunContext, value: int) -> int:
        entered.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cleaned_up.append(True)
            raise
        return value

    async with fast_worker(pool):
        handle = await endless.run(1)
        await asyncio.wait_for(entered.wait(), timeout=10)
        assert await pool.cancel(handle.id, "stop") == "requested"
        with pytest.raises(RunCanceledError):
            await handle.result(timeout=10)
    run = await pool.get_run(handle.id)
    assert (run.status, run.attempts, run.cancel_reason) == ("canceled", 1, "stop")
    assert cleaned_up == [True]


async def test_sync_handler_sees_ctx_cancelled(pool: Workpool) -> None:
    entered = threading.Event()

    @pool.workflow()
    def polling(ctx: RunContext, value: int) -> int:
        entered.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ctx.raise_if_cancelled()
            time.sleep(0.01)
        return value

    async with fast_worker(pool):
        handle = await polling.run(1)
        assert await asyncio.to_thread(entered.wait, 10)
        await handle.cancel()
        with pytest.raises(RunCanceledError):
            await handle.result(timeout=10)


async def test_cancel_of_finished_or_unknown_run(pool: Workpool) -> None:
    @pool.workflow()
    async def quick(ctx: RunContext, value: int) -> int:
        return value

    async with fast_worker(pool):
        handle = await quick.run(1)
        await handle.result(timeout=10)
    assert await pool.cancel(handle.id) == "finished"
    assert (await pool.get_run(handle.id)).status == "succeeded"
    with pytest.raises(RunNotFoundError):
        await pool.cancel("no-such-run")


async def test_cancel_all_by_workflow_and_time(pool: Workpool) -> None:
    @pool.workflow()
    async def alpha(ctx: RunContext, value: int) -> int:
        return value

    @pool.workflow()
    async def beta(ctx: RunContext, value: int) -> int:
        return value

    alphas = await pool.enqueue_many([alpha.prepare(n) for n in range(30)])
    betas = await pool.enqueue_many([beta.prepare(n) for n in range(30)])
    assert await pool.cancel_all(workflow="alpha", reason="cleanup") == 30
    assert {(await pool.get_run(h.id)).status for h in alphas} == {"canceled"}
    assert {(await pool.get_run(h.id)).status for h in betas} == {"queued"}
    assert await pool.cancel_all(before=datetime(2000, 1, 1, tzinfo=UTC)) == 0
    assert await pool.cancel_all() == 30
    assert {(await pool.get_run(h.id)).status for h in betas} == {"canceled"}
