"""End to end: execution time limits of async and sync handlers, on every backend."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import (
    ConfigurationError,
    RetryPolicy,
    RunContext,
    RunFailedError,
    Workpool,
)
from workpool.worker.metrics import WorkerMetrics

QUICK_RETRY = RetryPolicy(max_attempts=3, initial_backoff=timedelta(milliseconds=10))


async def test_an_async_handler_over_its_timeout_is_interrupted_and_fails(pool: Workpool) -> None:
    cleaned_up: list[bool] = []

    @pool.workflow(timeout=timedelta(milliseconds=300))
    async def slow(ctx: RunContext, value: int) -> int:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cleaned_up.append(True)
            raise
        return value

    handle = await slow.run(1)
    async with fast_worker(pool):
        with pytest.raises(RunFailedError) as failure:
            await handle.result(timeout=20)
    error = failure.value.error
    assert error is not None
    assert error.type == "RunTimeoutError"
    assert "attempt 1 exceeded its timeout of 0.3 s" in error.message
    run = await pool.get_run(handle.id)
    assert (run.status, run.attempts, cleaned_up) == ("failed", 1, [True])
    assert timedelta(milliseconds=250) < run.run_time < timedelta(seconds=15)


async def test_a_timed_out_attempt_is_retried_as_its_policy_says(pool: Workpool) -> None:
    @pool.workflow(timeout=0.3, retries=QUICK_RETRY)
    async def flaky(ctx: RunContext, value: int) -> int:
        if ctx.attempt == 1:
            await asyncio.sleep(30)
        return value * 2

    handle = await flaky.run(21)
    async with fast_worker(pool):
        assert await handle.result(timeout=20) == 42
    run = await pool.get_run(handle.id)
    assert run.attempts == 2
    assert run.error is not None
    assert run.error.type == "RunTimeoutError"


async def test_a_runs_own_timeout_wins_over_its_workflows(pool: Workpool) -> None:
    @pool.workflow(timeout=timedelta(seconds=30))
    async def patient(ctx: RunContext, seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    @pool.workflow(timeout=0.2)
    async def hasty(ctx: RunContext, seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    cut_short = await patient.run(30, timeout=0.2)
    given_longer = await hasty.run(0.5, timeout=timedelta(seconds=30))
    async with fast_worker(pool):
        with pytest.raises(RunFailedError) as failure:
            await cut_short.result(timeout=20)
        assert await given_longer.result(timeout=20) == 0.5
    assert failure.value.error is not None
    assert failure.value.error.type == "RunTimeoutError"
    assert (await pool.get_run(cut_short.id)).timeout == timedelta(seconds=0.2)
    assert (await pool.get_run(given_longer.id)).timeout == timedelta(seconds=30)


async def test_a_sync_handler_over_its_timeout_sees_cancelled_and_frees_its_slot(
    pool: Workpool,
) -> None:
    saw_cancelled = threading.Event()
    release = threading.Event()

    @pool.workflow(timeout=0.3)
    def stubborn(ctx: RunContext, value: int) -> int:
        while not ctx.cancelled:
            time.sleep(0.01)
        saw_cancelled.set()
        release.wait(20)  # goes on after its limit, as code that cannot be stopped does
        return value

    @pool.workflow()
    def quick(ctx: RunContext, value: int) -> int:
        return value + 1

    first = await stubborn.run(1)
    worker = fast_worker(pool, concurrency=1)
    async with worker:
        with pytest.raises(RunFailedError) as failure:
            await first.result(timeout=20)
        # The outcome may be stored before the thread's next look at ctx.cancelled.
        assert await asyncio.to_thread(saw_cancelled.wait, 10)
        # The thread still runs, but the one slot is free again.
        assert await (await quick.run(1)).result(timeout=20) == 2
        assert worker.abandoned_threads == 1
        release.set()
        await wait_until(lambda: worker.abandoned_threads == 0)
    assert failure.value.error is not None
    assert failure.value.error.type == "RunTimeoutError"
    assert (await pool.get_run(first.id)).status == "failed"


async def test_time_spent_waiting_in_a_durable_sleep_does_not_count(pool: Workpool) -> None:
    @pool.workflow(timeout=1.5)
    async def pausing(ctx: RunContext, value: int) -> int:
        await ctx.step.run("before", asyncio.sleep, 0.2)
        await ctx.step.sleep("wait", timedelta(seconds=2))
        await ctx.step.run("after", asyncio.sleep, 0.2)
        return value

    handle = await pausing.run(7)
    async with fast_worker(pool):
        assert await handle.result(timeout=20) == 7
    run = await pool.get_run(handle.id)
    assert (run.attempts, run.executions) == (1, 2)


async def test_the_executions_of_one_attempt_add_up_against_its_limit(pool: Workpool) -> None:
    @pool.workflow(timeout=2.0)
    async def long_haul(ctx: RunContext, value: int) -> int:
        await ctx.step.run("first half", asyncio.sleep, 1.2)
        await ctx.step.sleep("breather", timedelta(seconds=0.6))
        await ctx.step.run("second half", asyncio.sleep, 1.2)
        return value

    handle = await long_haul.run(1)
    async with fast_worker(pool):
        with pytest.raises(RunFailedError) as failure:
            await handle.result(timeout=20)
    assert failure.value.error is not None
    assert failure.value.error.type == "RunTimeoutError"
    run = await pool.get_run(handle.id)
    assert (run.attempts, run.executions) == (1, 2)
    assert timedelta(seconds=1.9) < run.run_time < timedelta(seconds=15)


async def test_a_handler_that_ignores_its_timeout_loses_its_lease_to_another_worker(
    pool: Workpool,
) -> None:
    release = asyncio.Event()
    executed_by_attempt: list[int] = []

    @pool.workflow(timeout=0.2, retries=QUICK_RETRY)
    async def deaf(ctx: RunContext, value: int) -> int:
        executed_by_attempt.append(ctx.attempt)
        if ctx.attempt == 1:
            while not release.is_set():
                with contextlib.suppress(asyncio.CancelledError):  # swallows every interruption
                    await asyncio.sleep(0.05)
        return value

    handle = await deaf.run(5)
    async with fast_worker(pool):
        await wait_until(lambda: executed_by_attempt == [1])
        async with fast_worker(pool):
            assert await handle.result(timeout=30) == 5
        release.set()
    run = await pool.get_run(handle.id)
    assert (run.status, run.attempts, executed_by_attempt) == ("succeeded", 2, [1, 2])


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "5", True])
async def test_a_timeout_that_is_not_a_positive_duration_is_refused(
    pool: Workpool, bad: object
) -> None:
    with pytest.raises(ConfigurationError, match="timeout"):

        @pool.workflow(timeout=bad)  # type: ignore[arg-type]
        async def never(ctx: RunContext, value: int) -> int:
            return value

    @pool.workflow()
    async def fine(ctx: RunContext, value: int) -> int:
        return value

    with pytest.raises(ConfigurationError, match="timeout"):
        await fine.run(1, timeout=bad)  # type: ignore[arg-type]
    assert (await pool.list_runs()).runs == []


async def test_timeouts_and_abandoned_threads_show_in_metrics_and_call_on_failure(
    pool: Workpool,
) -> None:
    release = threading.Event()
    failures: list[str] = []

    @pool.workflow(timeout=0.2, on_failure=lambda event: failures.append(event.run_id))
    def stuck(ctx: RunContext, value: int) -> int:
        release.wait(20)
        return value

    worker = fast_worker(pool)
    worker.metrics = metrics = WorkerMetrics()
    handle = await stuck.run(1)
    async with worker:
        with pytest.raises(RunFailedError):
            await handle.result(timeout=20)
        await wait_until(lambda: failures == [handle.id])
        registry = metrics.registry
        assert registry.get_sample_value("workpool_abandoned_threads") == 1
        assert (
            registry.get_sample_value("workpool_runs_timed_out_total", {"workflow": "stuck"}) == 1
        )
        release.set()
        await wait_until(lambda: registry.get_sample_value("workpool_abandoned_threads") == 0)


async def test_a_worker_told_to_recycles_once_it_abandons_a_thread(pool: Workpool) -> None:
    release = threading.Event()

    @pool.workflow(timeout=0.2)
    def stuck(ctx: RunContext, value: int) -> int:
        release.wait(20)
        return value

    handle = await stuck.run(1)
    worker = pool.worker(renew_every=0.1, shutdown_grace=1, recycle_on_abandoned_thread=True)
    try:
        await asyncio.wait_for(worker.run(), timeout=20)  # returns by itself
    finally:
        release.set()
    assert worker.recycle_reason == (f"run {handle.id}: a sync handler's thread was abandoned")
    run = await pool.get_run(handle.id)  # its outcome was written before it returned
    assert run.error is not None
    assert (run.status, run.error.type) == ("failed", "RunTimeoutError")
