"""End to end: max_concurrency and concurrency_key, on every backend."""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.conftest import fast_worker
from workpool import ConfigurationError, RunContext, Workpool


async def test_runs_of_one_key_take_turns_while_other_keys_run_alongside(pool: Workpool) -> None:
    running: dict[str, int] = {}
    overlaps: list[str] = []
    both_customers_seen = asyncio.Event()

    @pool.workflow(max_concurrency=1, concurrency_key=lambda order: order["customer"])
    async def invoice(ctx: RunContext, order: dict[str, str]) -> None:
        customer = order["customer"]
        running[customer] = running.get(customer, 0) + 1
        if running[customer] > 1:
            overlaps.append(customer)
        if sum(1 for count in running.values() if count) == 2:
            both_customers_seen.set()
        await asyncio.wait_for(both_customers_seen.wait(), 10)
        await asyncio.sleep(0.01)
        running[customer] -= 1

    handles = [
        await invoice.run({"customer": customer, "n": str(n)})
        for n in range(4)
        for customer in ("ada", "grace")
    ]
    async with fast_worker(pool, concurrency=8):
        for handle in handles:
            await handle.result(timeout=20)
    assert overlaps == []
    assert both_customers_seen.is_set()


async def test_runs_waiting_at_a_full_gate_cost_the_backend_nothing(pool: Workpool) -> None:
    release = asyncio.Event()

    @pool.workflow(max_concurrency=1)
    async def one_at_a_time(ctx: RunContext, n: int) -> None:
        await release.wait()

    await pool.enqueue_many([one_at_a_time.prepare(n) for n in range(10_000)])
    backend = await pool.backend()
    claims = 0
    real_claim = backend.claim

    async def counted_claim(*args: object, **kwargs: object) -> object:
        nonlocal claims
        claims += 1
        return await real_claim(*args, **kwargs)  # type: ignore[arg-type]

    backend.claim = counted_claim  # type: ignore[method-assign, assignment]
    async with fast_worker(pool, concurrency=10):
        await asyncio.sleep(0.5)  # the first run is running; 9,999 wait at the gate
        before = claims
        await asyncio.sleep(2)
        during = claims - before
        release.set()
    assert during <= 4, f"{during} claims in 2 s while every run waited at a full gate"


def test_bad_limits_are_refused_when_the_workflow_is_defined(pool: Workpool) -> None:
    with pytest.raises(ConfigurationError, match="from 1 to 9007199254740991, or None"):

        @pool.workflow(max_concurrency=0)
        async def never(ctx: RunContext, _: None) -> None: ...

    with pytest.raises(ConfigurationError, match="from 1 to 9007199254740991, or None"):

        @pool.workflow(max_concurrency=2.5)  # type: ignore[arg-type]
        async def fractional(ctx: RunContext, _: None) -> None: ...

    with pytest.raises(ConfigurationError, match="needs a max_concurrency"):

        @pool.workflow(max_concurrency=None, concurrency_key=lambda value: value)
        async def unscoped(ctx: RunContext, _: None) -> None: ...
