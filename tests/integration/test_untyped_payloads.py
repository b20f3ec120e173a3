"""End to end: untyped inputs, outputs, contexts and step results are stored only if JSON
holds them unchanged; context needs on_complete (issue 12)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import (
    ConfigurationError,
    OnComplete,
    PayloadError,
    RunContext,
    RunFailedError,
    Workpool,
)

EVERY_KIND = {
    "text": "naïve",
    "big": 2**70,
    "real": 1.5,
    "yes": True,
    "nothing": None,
    "list": [1, [2, {"deep": []}]],
    "dict": {"k": {}},
}


class Order(BaseModel):
    order_id: str
    amount_cents: int


async def test_untyped_input_json_would_change_is_refused_at_enqueue(pool: Workpool) -> None:
    @pool.workflow()
    async def charge(ctx: RunContext, order):  # type: ignore[no-untyped-def]  # untyped on purpose
        return order

    @pool.workflow()
    async def refund(ctx: RunContext, order: Any) -> Any:
        return order

    with pytest.raises(PayloadError) as raised:
        await charge.run({"items": [1, 2, {3}]})
    assert str(raised.value) == (
        "input of workflow 'charge': $.items[2] is a set; JSON has no sets: pass a list"
        " (or annotate the handler's input with its type)"
    )
    with pytest.raises(PayloadError, match=r"'refund': \$\.lines has the key 1 \(int\)"):
        await refund.run({"lines": {1: "book"}})
    with pytest.raises(PayloadError, match=r"'refund': \$\.total is a Decimal"):
        await pool.run_by_name("refund", {"total": Decimal("9.99")})
    with pytest.raises(PayloadError, match=r"'elsewhere': \$\.at is a datetime"):
        await pool.run_by_name("elsewhere", {"at": datetime.now(UTC)})
    with pytest.raises(PayloadError, match=r"\$\[1\] is a tuple"):
        await pool.enqueue_many([charge.prepare([1, (2, 3)])])
    assert (await pool.list_runs()).runs == []


async def test_untyped_values_that_round_trip_reach_the_handler_and_result_unchanged(
    pool: Workpool,
) -> None:
    @pool.workflow()
    async def echo(ctx: RunContext, value):  # type: ignore[no-untyped-def]  # untyped on purpose
        return value

    handle = await echo.run(EVERY_KIND)
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == EVERY_KIND


async def test_pydantic_models_and_dataclasses_need_an_annotation(pool: Workpool) -> None:
    """Decided: an untyped workflow would receive a dict, so a model is refused; the
    message says to annotate the input (typed workflows receive the model)."""

    @pool.workflow()
    async def untyped(ctx: RunContext, order):  # type: ignore[no-untyped-def]  # on purpose
        return None

    @pool.workflow()
    async def typed(ctx: RunContext, order: Order) -> int:
        assert isinstance(order, Order)
        return order.amount_cents

    with pytest.raises(PayloadError, match=r"\$ is a pydantic model Order.*annotate"):
        await untyped.run(Order(order_id="A-1", amount_cents=5))
    handle = await typed.run(Order(order_id="A-1", amount_cents=5))
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == 5


async def test_typed_workflows_serialize_by_their_type_as_before(pool: Workpool) -> None:
    @pool.workflow()
    async def schedule(ctx: RunContext, when: datetime) -> set[int]:
        assert isinstance(when, datetime)
        return {when.year, when.month}

    handle = await schedule.run(datetime(2026, 3, 1, tzinfo=UTC))
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == {2026, 3}


async def test_an_untyped_output_json_would_change_fails_the_run(pool: Workpool) -> None:
    @pool.workflow(retries=True)
    async def tags(ctx: RunContext, value):  # type: ignore[no-untyped-def]  # on purpose
        return {"tags": {"a", "b"}}

    handle = await tags.run(None)
    async with fast_worker(pool):
        with pytest.raises(RunFailedError) as raised:
            await handle.result(timeout=10)
    assert raised.value.error is not None
    assert raised.value.error.type == "PayloadError"
    assert "output of workflow 'tags': $.tags is a set" in raised.value.error.message
    assert (await pool.get_run(handle.id)).attempts == 1  # not retried: it cannot change


async def test_a_step_result_json_would_change_fails_and_a_good_one_replays_equal(
    pool: Workpool,
) -> None:
    firsts: list[Any] = []

    @pool.workflow()
    async def pairs(ctx: RunContext, kind: str) -> Any:
        if kind == "tuple":
            return await ctx.step.run("pair", lambda: (1, 2))
        first = await ctx.step.run("pair", lambda: [1, {"two": 2}])
        firsts.append(first)
        if len(firsts) == 1:
            await ctx.step.sleep("replay", 0.6)  # suspends: the run replays from the top
        return first

    bad = await pairs.run("tuple")
    good = await pairs.run("list")
    async with fast_worker(pool):
        with pytest.raises(RunFailedError) as raised:
            await bad.result(timeout=10)
        assert await good.result(timeout=10) == [1, {"two": 2}]
    assert raised.value.error is not None
    assert "result of step 'pair': $ is a tuple" in raised.value.error.message
    assert firsts == [[1, {"two": 2}], [1, {"two": 2}]]


async def test_context_must_round_trip_and_reaches_on_complete_unchanged(pool: Workpool) -> None:
    seen: list[Any] = []

    @pool.workflow()
    async def settled(ctx: RunContext, event: OnComplete) -> None:
        seen.append(event.context)

    @pool.workflow()
    async def charge(ctx: RunContext, amount: int) -> int:
        return amount

    with pytest.raises(PayloadError, match=r"^on_complete context: \$\.at is a datetime"):
        await charge.run(1, on_complete=settled, context={"at": datetime.now(UTC)})
    await charge.run(1, on_complete=settled, context={"order_id": "A-1", "lines": [1, 2]})
    async with fast_worker(pool):
        await wait_until(lambda: bool(seen))
    assert seen == [{"order_id": "A-1", "lines": [1, 2]}]


async def test_context_without_on_complete_is_a_configuration_error(pool: Workpool) -> None:
    @pool.workflow()
    async def charge(ctx: RunContext, amount: int) -> int:
        return amount

    message = r"context is passed to on_complete; give on_complete=\.\.\. or drop context"
    with pytest.raises(ConfigurationError, match=message):
        await charge.run(1, context={"order_id": "A-1"})
    with pytest.raises(ConfigurationError, match=message):
        charge.prepare(1, context="x")
    with pytest.raises(ConfigurationError, match=message):
        await pool.run_by_name("charge", 1, context=0)
    with pytest.raises(ConfigurationError, match=message):
        await asyncio.to_thread(charge.run_sync, 1, context=[])
    assert (await pool.list_runs()).runs == []
    assert charge.prepare(1, context=None).workflow == "charge"
