"""End to end: define, enqueue, execute, read results — on every backend."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from pydantic import BaseModel, ValidationError

from tests.integration.conftest import fast_worker
from workpool import (
    Finished,
    NonRetriableError,
    Pending,
    RetryPolicy,
    RunContext,
    RunFailedError,
    Success,
    Workpool,
)

QUICK_RETRY = RetryPolicy(max_attempts=3, initial_backoff=timedelta(milliseconds=10))


class Order(BaseModel):
    order_id: int
    amount: float


class Receipt(BaseModel):
    order_id: int
    total_cents: int


async def test_async_and_sync_handlers_return_their_output(pool: Workpool) -> None:
    @pool.workflow()
    async def double(ctx: RunContext, value: int) -> int:
        return value * 2

    @pool.workflow()
    def shout(ctx: RunContext, text: str) -> str:
        return text.upper()

    async with fast_worker(pool):
        first = await double.run(21)
        second = await shout.run("hi")
        assert await first.result(timeout=10) == 42
        assert await second.result(timeout=10) == "HI"
    assert await first.status() == Finished(Success(output=42))
    run = await pool.get_run(first.id)
    assert (run.status, run.attempts, run.input, run.output) == ("succeeded", 1, 21, 42)
    assert run.started_at is not None
    assert run.finished_at is not None
    assert run.created_at <= run.started_at <= run.finished_at


async def test_typed_input_is_validated_at_enqueue_and_output_serialized(pool: Workpool) -> None:
    @pool.workflow()
    async def charge(ctx: RunContext, order: Order) -> Receipt:
        assert isinstance(order, Order)
        return Receipt(order_id=order.order_id, total_cents=round(order.amount * 100))

    with pytest.raises(ValidationError):
        await charge.run({"order_id": "not a number", "amount": 1})  # type: ignore[arg-type]
    handle = await charge.run(Order(order_id=7, amount=12.5))
    async with fast_worker(pool):
        receipt = await handle.result(timeout=10)
    assert receipt == Receipt(order_id=7, total_cents=1250)
    stored = await pool.get_run(handle.id)
    assert stored.input == {"order_id": 7, "amount": 12.5}
    assert stored.output == {"order_id": 7, "total_cents": 1250}


async def test_invalid_input_stores_nothing(pool: Workpool) -> None:
    @pool.workflow()
    async def typed(ctx: RunContext, order: Order) -> None:
        return None

    with pytest.raises(ValidationError):
        await typed.run({"amount": "lots"})  # type: ignore[arg-type]
    backend = await pool.backend()
    claimed = await backend.claim(["default"], "probe", 10, 5.0, 3, time.time())
    assert claimed.runs == []


async def test_unserializable_output_fails_without_retry(pool: Workpool) -> None:
    @pool.workflow(retries=QUICK_RETRY)
    async def leaky(ctx: RunContext, value: int) -> object:
        return object()

    async with fast_worker(pool):
        handle = await leaky.run(1)
        with pytest.raises(RunFailedError) as failure:
            await handle.result(timeout=10)
    assert failure.value.error.type == "PayloadError"
    assert "object" in failure.value.error.message
    assert (await pool.get_run(handle.id)).attempts == 1


async def test_flaky_handler_is_retried_until_it_succeeds(pool: Workpool) -> None:
    calls: list[int] = []

    @pool.workflow(retries=QUICK_RETRY)
    async def flaky(ctx: RunContext, value: int) -> int:
        calls.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("payment gateway timed out")
        return value

    async with fast_worker(pool):
        handle = await flaky.run(5)
        assert await handle.result(timeout=10) == 5
    assert calls == [1, 2, 3]
    run = await pool.get_run(handle.id)
    assert run.attempts == 3
    assert run.error is not None
    assert run.error.type == "ConnectionError"


async def test_retries_exhausted_fail_with_the_last_error(pool: Workpool) -> None:
    @pool.workflow()
    async def broken(ctx: RunContext, value: int) -> int:
        raise ValueError(f"bad value {value} on attempt {ctx.attempt}")

    async with fast_worker(pool):
        handle = await broken.run(3, retry=QUICK_RETRY)
        with pytest.raises(RunFailedError) as failure:
            await handle.result(timeout=10)
    assert failure.value.error.type == "ValueError"
    assert failure.value.error.message == "bad value 3 on attempt 3"
    assert "Traceback" in (failure.value.error.traceback or "")
    assert (await pool.get_run(handle.id)).attempts == 3


async def test_without_a_policy_a_failure_is_final(pool: Workpool) -> None:
    @pool.workflow()
    async def once(ctx: RunContext, value: int) -> int:
        raise RuntimeError("no")

    async with fast_worker(pool):
        handle = await once.run(1)
        with pytest.raises(RunFailedError):
            await handle.result(timeout=10)
    assert (await pool.get_run(handle.id)).attempts == 1


async def test_non_retriable_error_is_not_retried(pool: Workpool) -> None:
    @pool.workflow(retries=QUICK_RETRY)
    async def refuse(ctx: RunContext, value: int) -> int:
        raise NonRetriableError("card declined")

    async with fast_worker(pool):
        handle = await refuse.run(1)
        with pytest.raises(RunFailedError) as failure:
            await handle.result(timeout=10)
    assert failure.value.error.message == "card declined"
    assert (await pool.get_run(handle.id)).attempts == 1


def test_retry_choice_resolution() -> None:
    pool = Workpool("sqlite:///unused.db")
    custom = RetryPolicy(max_attempts=9)
    assert pool.resolve_retry(None, None) is None
    assert pool.resolve_retry(True, None) == RetryPolicy()
    assert pool.resolve_retry(False, custom) is None
    assert pool.resolve_retry(None, custom) == custom
    assert pool.resolve_retry(custom, False) == custom
    assert Workpool("sqlite:///unused.db", retry_by_default=True).resolve_retry(None, None) == (
        RetryPolicy()
    )


async def test_delayed_run_waits_for_its_time(pool: Workpool) -> None:
    started: list[float] = []

    @pool.workflow()
    async def later(ctx: RunContext, value: int) -> int:
        started.append(time.time())
        return value

    async with fast_worker(pool):
        enqueued_at = time.time()
        handle = await later.run(1, run_after=timedelta(milliseconds=600))
        assert await handle.status() == Pending(previous_attempts=0)
        assert (await pool.get_run(handle.id)).status == "scheduled"
        assert await handle.result(timeout=10) == 1
    assert started[0] - enqueued_at >= 0.6


async def test_idempotency_key_returns_the_first_run(pool: Workpool) -> None:
    @pool.workflow()
    async def once_per_key(ctx: RunContext, value: int) -> int:
        return value

    first = await once_per_key.run(1, idempotency_key="order-1")
    second = await once_per_key.run(2, idempotency_key="order-1")
    other = await once_per_key.run(3, idempotency_key="order-2")
    assert first.id == second.id
    assert other.id != first.id
    assert (await pool.get_run(first.id)).input == 1


async def test_enqueue_many_returns_handles_in_order(pool: Workpool) -> None:
    @pool.workflow()
    async def square(ctx: RunContext, value: int) -> int:
        return value * value

    handles = await pool.enqueue_many([square.prepare(n) for n in range(50)])
    async with fast_worker(pool, concurrency=20):
        results = await asyncio.gather(*(handle.result(timeout=20) for handle in handles))
    assert results == [n * n for n in range(50)]


async def test_a_run_of_a_workflow_the_worker_does_not_define_waits_for_one_that_does(
    pool: Workpool,
) -> None:
    handle = await pool.run_by_name("defined_elsewhere", {"x": 1}, retry=True)

    @pool.workflow(max_concurrency=None)
    async def local(ctx: RunContext, value: int) -> int:
        return value

    async with fast_worker(pool):
        assert await (await local.run(3)).result(timeout=10) == 3  # it claimed past it
    run = await pool.get_run(handle.id)
    assert (run.status, run.attempts, run.error) == ("queued", 0, None)


async def test_run_by_name_validates_known_workflows(pool: Workpool) -> None:
    @pool.workflow()
    async def typed(ctx: RunContext, order: Order) -> int:
        return order.order_id

    with pytest.raises(ValidationError):
        await pool.run_by_name("typed", {"order_id": "x"})
    handle = await pool.run_by_name("typed", {"order_id": 4, "amount": 1})
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == 4


async def test_result_timeout_only_stops_the_wait(pool: Workpool) -> None:
    @pool.workflow()
    async def slow(ctx: RunContext, value: int) -> int:
        await asyncio.sleep(0.5)
        return value

    async with fast_worker(pool):
        handle = await slow.run(1)
        with pytest.raises(TimeoutError):
            await handle.result(timeout=0.05)
        assert await handle.result(timeout=10) == 1


async def test_retry_starts_at_its_time_even_when_the_worker_idles(pool: Workpool) -> None:
    @pool.workflow(retries=RetryPolicy(max_attempts=2, initial_backoff=timedelta(milliseconds=50)))
    async def flaky_once(ctx: RunContext, value: int) -> int:
        if ctx.attempt == 1:
            raise ConnectionError("first attempt fails")
        return value

    async with fast_worker(pool):
        await flaky_once.run(0, run_after=timedelta(minutes=10))  # the worker's next wake-up
        await asyncio.sleep(0.2)
        handle = await flaky_once.run(7)
        # Sooner than a worker that missed the retry would look again (its idle wait
        # is capped at 5 s), with room for a loaded machine.
        assert await handle.result(timeout=3) == 7
