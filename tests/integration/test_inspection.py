"""End to end: finding runs, stats and re-running failed runs through the pool API."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import RunContext, RunFailedError, RunNotFoundError, RunStateError, Workpool


async def test_list_runs_pages_through_a_workflows_history(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def double(ctx: RunContext, n: int) -> int:
        return 2 * n

    handles = [await double.run(n) for n in range(7)]
    async with fast_worker(pool):
        for handle in handles:
            await handle.result(timeout=10)
    await double.run(100)  # queued

    seen: list[str] = []
    cursor = None
    while True:
        page = await pool.list_runs(workflow="double", status="succeeded", limit=3, cursor=cursor)
        seen += [run.id for run in page.runs]
        assert all(run.status == "succeeded" and run.output is not None for run in page.runs)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert seen == sorted((handle.id for handle in handles), reverse=True)
    assert [run.input for run in (await pool.list_runs(status="queued")).runs] == [100]


async def test_list_runs_refuses_bad_arguments(pool: Workpool) -> None:
    with pytest.raises(ValueError, match="unknown run status 'done'"):
        await pool.list_runs(status="done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit must be between 1 and 1000"):
        await pool.list_runs(limit=0)


async def test_stats_add_up_outcomes_per_queue_and_workflow(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None, queue="mail")
    async def send(ctx: RunContext, ok: bool) -> None:
        if not ok:
            raise ValueError("bounced")

    @pool.workflow(max_concurrency=None, queue="money")
    async def bill(ctx: RunContext, _: None) -> None: ...

    runs = [await send.run(True), await send.run(False), await bill.run(None)]
    async with pool.worker(queues=["mail", "money"], concurrency=4):
        for handle in runs:
            with contextlib.suppress(RunFailedError):
                await handle.result(timeout=10)
    await bill.run(None)  # pending in money

    stats = await pool.stats(timedelta(minutes=5))
    assert (stats.total.completed, stats.total.succeeded, stats.total.failed) == (3, 2, 1)
    assert stats.total.executions == 3
    assert stats.total.error_rate == pytest.approx(1 / 3)
    assert stats.total.permanent_failure_rate == pytest.approx(1 / 3)
    assert stats.total.average_run_time is not None
    assert stats.by_queue["money"].pending == 1
    assert stats.by_queue["money"].oldest_pending_age is not None
    assert (stats.by_workflow["send"].failed, stats.by_workflow["bill"].succeeded) == (1, 1)
    only_send = await pool.stats(workflow="send")
    assert set(only_send.by_workflow) == {"send"}
    assert only_send.total.oldest_pending_age is None
    with pytest.raises(ValueError, match="window"):
        await pool.stats(timedelta(days=2))


async def test_retry_run_enqueues_a_linked_copy(pool: Workpool) -> None:
    attempts: list[int] = []

    @pool.workflow(max_concurrency=None)
    async def fragile(ctx: RunContext, n: int) -> int:
        attempts.append(n)
        if len(attempts) == 1:
            raise ValueError("first time")
        return n

    failed = await fragile.run(5)
    async with fast_worker(pool):
        with pytest.raises(RunFailedError):
            await failed.result(timeout=10)
        again = await pool.retry_run(failed.id)
        assert await again.result(timeout=10) == 5
    assert (await pool.get_run(failed.id)).retried_as == again.id
    assert (await pool.get_run(again.id)).retry_of == failed.id
    assert (await pool.retry_run(failed.id)).id == again.id  # a second retry: the same run
    with pytest.raises(RunStateError, match="succeeded: only a failed or canceled run"):
        await pool.retry_run(again.id)
    with pytest.raises(RunNotFoundError):
        await pool.retry_run("nope")
