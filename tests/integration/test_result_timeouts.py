"""``result(timeout=...)`` that gives up says why the run has not finished: the same
reason as ``waiting_reason`` and ``workpool runs show``, on both backends."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import RateLimit, ResultTimeoutError, RunContext, RunHandle, Workpool


async def _timeout_of(handle: RunHandle[Any], seconds: float = 0.2) -> ResultTimeoutError:
    with pytest.raises(TimeoutError) as caught:
        await handle.result(timeout=seconds)
    assert isinstance(caught.value, ResultTimeoutError)
    assert caught.value.run_id == handle.id
    assert f"run {handle.id} did not finish within {seconds} s" in str(caught.value)
    return caught.value


async def _same_as_runs_show(pool: Workpool, handle: RunHandle[Any], error: Exception) -> None:
    reason = await pool.waiting_reason(await pool.get_run(handle.id))
    assert reason is not None
    assert reason in str(error)


async def test_a_run_no_live_worker_serves_says_so(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def nightly(ctx: RunContext, _: None) -> None: ...

    handle = await nightly.run(None)
    error = await _timeout_of(handle)
    assert error.waiting == (
        "waiting: no worker defines workflow 'nightly' on queue 'default' (0 live workers)"
    )
    assert "it is queued, waiting: no worker defines workflow 'nightly'" in str(error)
    await _same_as_runs_show(pool, handle, error)
    assert await handle.status() is not None  # the handle still works after the timeout


async def test_a_run_at_its_workflows_concurrency_limit_says_so(pool: Workpool) -> None:
    release = asyncio.Event()

    @pool.workflow()  # max_concurrency=1
    async def invoice(ctx: RunContext, number: int) -> int:
        await release.wait()
        return number

    first, second = await invoice.run(1), await invoice.run(2)
    async with fast_worker(pool):

        async def first_running() -> bool:
            return (await pool.get_run(first.id)).status == "running"

        await wait_until(first_running)
        error = await _timeout_of(second)
        await _same_as_runs_show(pool, second, error)
        release.set()
        assert await second.result(timeout=10) == 2
    assert "workflow 'invoice' is at max_concurrency 1" in str(error)


async def test_a_run_of_a_paused_queue_says_so(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def report(ctx: RunContext, _: None) -> str:
        return "done"

    await pool.pause("default")
    handle = await report.run(None)
    async with fast_worker(pool):
        error = await _timeout_of(handle)
        await _same_as_runs_show(pool, handle, error)
        await pool.resume("default")
        assert await handle.result(timeout=10) == "done"
    assert error.waiting == "waiting: queue 'default' is paused"


async def test_a_run_of_a_queue_at_its_max_parallelism_says_so(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def report(ctx: RunContext, _: None) -> str:
        return "done"

    await pool.set_max_parallelism("default", 0)
    handle = await report.run(None)
    async with fast_worker(pool):
        error = await _timeout_of(handle)
        await _same_as_runs_show(pool, handle, error)
        await pool.set_max_parallelism("default", None)
        assert await handle.result(timeout=10) == "done"
    assert error.waiting == (
        "waiting: queue 'default' is at its max_parallelism 0 (0 of its runs running)"
    )


async def test_a_rate_limited_run_says_when_it_may_start(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None, rate_limit=RateLimit(1, per=timedelta(hours=1)))
    async def call_partner(ctx: RunContext, number: int) -> int:
        return number

    first, second = await call_partner.run(1), await call_partner.run(2)
    async with fast_worker(pool):
        assert await first.result(timeout=10) == 1
        error = await _timeout_of(second)
        await _same_as_runs_show(pool, second, error)
    assert error.waiting is not None
    assert error.waiting.startswith("waiting: rate limited: it may start at ")
    assert "(in 59 min" in error.waiting or "(in 1 h" in error.waiting


async def test_a_run_scheduled_for_later_says_when(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def reminder(ctx: RunContext, _: None) -> None: ...

    handle = await reminder.run(None, run_after=timedelta(minutes=10))
    async with fast_worker(pool):
        error = await _timeout_of(handle)
        await _same_as_runs_show(pool, handle, error)
    assert error.waiting is not None
    assert error.waiting.startswith("waiting: scheduled to start at ")
    assert "it is scheduled" in str(error)


async def test_a_running_run_says_it_runs(pool: Workpool) -> None:
    release = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def slow(ctx: RunContext, _: None) -> str:
        await release.wait()
        return "done"

    handle = await slow.run(None)
    async with fast_worker(pool):

        async def running() -> bool:
            return (await pool.get_run(handle.id)).status == "running"

        await wait_until(running)
        error = await _timeout_of(handle)
        release.set()
        assert await handle.result(timeout=10) == "done"
    assert error.waiting is None
    assert "it is running (attempt 1)" in str(error)
