"""End to end: workers register their app's workflows; stale ones leave the registry."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import ConfigurationError, RetryPolicy, RunContext, Workpool
from workpool.clock import ManualClock


async def test_a_worker_registers_its_definitions(pool: Workpool) -> None:
    @pool.workflow(queue="payments", max_concurrency=4, retries=RetryPolicy(max_attempts=2))
    async def charge(ctx: RunContext, _: None) -> None: ...

    @pool.workflow(max_concurrency=None)
    async def refund(ctx: RunContext, _: None) -> None: ...

    async with fast_worker(pool):
        pass
    listed = await pool.list_workflows()
    assert [(w.name, w.app, w.queue, w.max_concurrency) for w in listed] == [
        ("charge", "tests", "payments", 4),
        ("refund", "tests", "default", None),
    ]
    assert listed[0].retry["max_attempts"] == 2
    assert listed[1].retry is None
    assert listed[0].cron == []


async def test_a_definition_dropped_by_its_app_leaves_after_the_grace(backend_url: str) -> None:
    clock = ManualClock()
    before = Workpool(backend_url, app="shop", clock=clock)

    @before.workflow()
    async def old_report(ctx: RunContext, _: None) -> None: ...

    handle = await old_report.run(None)
    async with fast_worker(before):
        await handle.result(timeout=10)
    await before.aclose()

    after = Workpool(backend_url, app="shop", clock=clock)
    other_app = Workpool(backend_url, app="billing", clock=clock)
    try:
        clock.advance(10)
        async with fast_worker(other_app), fast_worker(after):
            pass
        assert [w.name for w in await after.list_workflows()] == ["old_report"]  # grace
        clock.advance(25)
        async with fast_worker(other_app):
            pass
        assert [w.name for w in await after.list_workflows()] == ["old_report"]  # other app
        async with fast_worker(after):
            pass
        assert await after.list_workflows() == []
        assert (await after.get_run(handle.id)).status == "succeeded"  # history is kept
    finally:
        await after.aclose()
        await other_app.aclose()


def test_a_worker_needs_an_app(backend_url: str) -> None:
    anonymous = Workpool(backend_url)
    with pytest.raises(ConfigurationError, match="app="):
        anonymous.worker()


async def test_a_run_by_name_takes_the_queue_and_retry_policy_its_workers_registered(
    backend_url: str,
) -> None:
    billing = Workpool(backend_url, app="billing")

    @billing.workflow(queue="payments", retries=RetryPolicy(max_attempts=7))
    async def charge(ctx: RunContext, cents: int) -> int:
        return cents

    shop = Workpool(backend_url, app="shop")  # defines no workflow: enqueues by name
    try:
        async with billing.worker(queues=["payments"], shutdown_grace=timedelta(seconds=2)) as w:
            await asyncio.wait_for(w.started.wait(), 10)  # its definitions are registered
            registered = await shop.run_by_name("charge", 5)
            assert await registered.result(timeout=10) == 5  # a worker of "payments" ran it
        elsewhere = await shop.run_by_name("charge", 6, queue="other", retry=False)
        backend = await shop.backend()
        stored = await backend.get_run(registered.id)
        assert stored is not None
        assert stored.queue == "payments"
        assert json.loads(stored.retry or "null")["max_attempts"] == 7
        given = await backend.get_run(elsewhere.id)  # the caller's own options win
        assert given is not None
        assert (given.queue, given.retry) == ("other", None)
    finally:
        await billing.aclose()
        await shop.aclose()
