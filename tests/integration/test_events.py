"""End to end: events into a run (ctx.step.wait_for_event, send_event) and values a run
publishes (ctx.set_event, get_event), with in-process workers on every backend."""

from __future__ import annotations

import asyncio
import collections
import math
import signal
import threading
from datetime import timedelta
from typing import Any

import pytest

from tests.integration import process_app
from tests.integration.conftest import fast_worker
from tests.integration.processes import Workers
from tests.polling import wait_until
from workpool import (
    ConfigurationError,
    PayloadError,
    RetryPolicy,
    RunContext,
    RunFailedError,
    Running,
    RunNotFoundError,
    RunStateError,
    Workpool,
)


async def suspended(pool: Workpool, run_id: str) -> bool:
    return (await pool.get_run(run_id)).status == "suspended"


async def test_a_waiting_run_frees_its_slot_and_gets_the_event_sent_to_it(pool: Workpool) -> None:
    @pool.workflow()
    async def approval(ctx: RunContext, order: str) -> str:
        decision = await ctx.step.wait_for_event("decision", "approval")
        return f"{order}: {decision['by']} said {decision['answer']}"

    @pool.workflow()
    async def other(ctx: RunContext, n: int) -> int:
        return n + 1

    handle = await approval.run("order-7")
    async with fast_worker(pool, concurrency=1):
        await wait_until(lambda: suspended(pool, handle.id))
        assert isinstance(await handle.status(), Running)
        assert await (await other.run(1)).result(timeout=10) == 2  # the slot is free
        await handle.send_event("approval", {"by": "ana", "answer": "yes"})
        assert await handle.result(timeout=10) == "order-7: ana said yes"
    [step] = await pool.get_steps(handle.id)
    assert (step.name, step.kind, step.status, step.output) == (
        "decision",
        "event",
        "succeeded",
        {"by": "ana", "answer": "yes"},
    )


async def test_an_event_sent_before_the_run_waits_is_delivered_when_it_does(
    pool: Workpool,
) -> None:
    @pool.workflow()
    async def early(ctx: RunContext, _: None) -> Any:
        return await ctx.step.wait_for_event("go", "go")

    handle = await early.run(None)
    await pool.send_event(handle.id, "go", [1, "two", None])
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == [1, "two", None]
    assert (await pool.get_run(handle.id)).executions == 1  # it never suspended


async def test_two_waits_take_two_events_in_order_and_a_retry_replays_them(
    pool: Workpool,
) -> None:
    executions: collections.Counter[int] = collections.Counter()

    @pool.workflow(retries=RetryPolicy(max_attempts=2, initial_backoff=0.01))
    async def two(ctx: RunContext, _: None) -> list[Any]:
        first = await ctx.step.wait_for_event("first", "item")
        executions[ctx.attempt] += 1
        if ctx.attempt == 1:
            raise ConnectionError("flaky, after the first event was taken")
        second = await ctx.step.wait_for_event("second", "item")
        other = await ctx.step.wait_for_event("other", "other-key")
        return [first, second, other]

    handle = await two.run(None)
    async with fast_worker(pool):
        await handle.send_event("other", "ignored: another key")
        await pool.send_event(handle.id, "item", "a")
        await pool.send_event(handle.id, "item", "b")
        await pool.send_event(handle.id, "other-key", "c")
        assert await handle.result(timeout=10) == ["a", "b", "c"]
    assert executions[2] >= 1  # the retry replayed "first" from its saved payload
    steps = {step.name: step.output for step in await pool.get_steps(handle.id)}
    assert steps == {"first": "a", "second": "b", "other": "c"}


async def test_a_wait_that_times_out_returns_none_and_the_deadline_survives_replays(
    pool: Workpool,
) -> None:
    @pool.workflow()
    async def patient(ctx: RunContext, _: None) -> list[Any]:
        # The sleep suspends and replays the run before the wait times out.
        waited = await asyncio.gather(
            ctx.step.wait_for_event("answer", "answer", timeout=timedelta(seconds=1.5)),
            ctx.step.sleep("nap", 0.6),
        )
        return list(waited)

    handle = await patient.run(None)
    async with fast_worker(pool):
        assert await handle.result(timeout=20) == [None, None]
        run = await pool.get_run(handle.id)
    answer = {step.name: step for step in await pool.get_steps(handle.id)}["answer"]
    assert (answer.status, answer.output) == ("succeeded", None)
    assert answer.wake_at is not None
    assert answer.finished_at is not None
    assert answer.finished_at >= answer.wake_at
    assert (answer.wake_at - answer.started_at).total_seconds() == pytest.approx(1.5)
    assert run.executions >= 3  # first, after the nap, after the timeout


async def test_sending_to_unknown_or_finished_runs_is_a_clear_error(pool: Workpool) -> None:
    @pool.workflow()
    async def quick(ctx: RunContext, _: None) -> int:
        return 1

    with pytest.raises(RunNotFoundError, match="no run with id 'nope'"):
        await pool.send_event("nope", "approval", True)
    handle = await quick.run(None)
    async with fast_worker(pool):
        await handle.result(timeout=10)
    with pytest.raises(RunStateError, match="has finished and takes no more events"):
        await handle.send_event("approval", True)
    with pytest.raises(RunStateError, match="has finished"):
        await asyncio.to_thread(pool.send_event_sync, handle.id, "approval", True)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (math.nan, "NaN"),
        ("bad \ud800", "surrogate"),
        ({1, 2}, "set"),
        ("huge", "over the limit"),
    ],
)
async def test_bad_payloads_are_refused_and_nothing_is_sent(
    pool: Workpool, payload: Any, message: str
) -> None:
    @pool.workflow()
    async def listener(ctx: RunContext, _: None) -> Any:
        return await ctx.step.wait_for_event("got", "k", timeout=0.6)

    if payload == "huge":
        payload = "x" * pool.max_payload_bytes
    handle = await listener.run(None)
    with pytest.raises(PayloadError, match=message):
        await handle.send_event("k", payload)
    async with fast_worker(pool):
        assert await handle.result(timeout=20) is None  # nothing came


async def test_a_retried_delivery_with_its_event_id_is_taken_once(pool: Workpool) -> None:
    @pool.workflow()
    async def approval(ctx: RunContext, _: None) -> list[Any]:
        first = await ctx.step.wait_for_event("first", "decision")
        second = await ctx.step.wait_for_event("second", "decision", timeout=0.5)
        return [first, second]

    handle = await approval.run(None)
    assert await pool.send_event(handle.id, "decision", "yes", event_id="delivery-7") is True
    assert await handle.send_event("decision", "yes again", event_id="delivery-7") is False
    assert (
        await asyncio.to_thread(handle.send_event_sync, "decision", "yes", event_id="delivery-7")
        is False
    )
    async with fast_worker(pool):
        assert await handle.result(timeout=20) == ["yes", None]  # the repeats stored nothing
    assert await pool.send_event(handle.id, "decision", "late", event_id="delivery-7") is False


@pytest.mark.parametrize("event_id", ["", "x" * 201, "line\nbreak", 42])
async def test_bad_event_ids_are_refused_and_nothing_is_sent(pool: Workpool, event_id: Any) -> None:
    @pool.workflow()
    async def listener(ctx: RunContext, _: None) -> Any:
        return await ctx.step.wait_for_event("wait", "k", timeout=0.2)

    handle = await listener.run(None)
    with pytest.raises(ConfigurationError, match="event id"):
        await handle.send_event("k", 1, event_id=event_id)
    async with fast_worker(pool):
        assert await handle.result(timeout=20) is None


@pytest.mark.parametrize("key", ["", "x" * 201, "line\nbreak", 42])
async def test_bad_keys_are_refused(pool: Workpool, key: Any) -> None:
    @pool.workflow()
    async def named(ctx: RunContext, _: None) -> None:
        await ctx.step.wait_for_event("wait", key)

    handle = await named.run(None)
    with pytest.raises(ConfigurationError, match="event key"):
        await handle.send_event(key, 1)
    with pytest.raises(ConfigurationError, match="event key"):
        await handle.get_event(key)
    async with fast_worker(pool):
        with pytest.raises(RunFailedError, match="ConfigurationError: step 'wait': event key"):
            await handle.result(timeout=10)


async def test_published_values_are_read_and_waited_for(pool: Workpool) -> None:
    go_on = asyncio.Event()

    @pool.workflow()
    async def publisher(ctx: RunContext, _: None) -> str:
        await ctx.set_event("status", {"phase": "checking"})
        await go_on.wait()
        await ctx.set_event("status", {"phase": "done"})
        await ctx.set_event("total", 12.5)
        return "ok"

    handle = await publisher.run(None)
    assert await handle.get_event("status", timeout=0) is None  # not yet, and no wait
    async with fast_worker(pool):
        assert await handle.get_event("status") == {"phase": "checking"}
        assert await handle.get_event("total", timeout=0.1) is None  # timed out
        waiting = asyncio.create_task(handle.get_event("total"))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        go_on.set()
        assert await asyncio.wait_for(waiting, 10) == 12.5
        assert await handle.result(timeout=10) == "ok"
    assert await pool.get_event(handle.id, "status") == {"phase": "done"}
    assert await handle.get_event("never-published") is None  # the run ended: no wait
    with pytest.raises(RunNotFoundError):
        await pool.get_event("nope", "status")


async def test_a_sync_handler_publishes_from_its_thread(pool: Workpool) -> None:
    go_on = threading.Event()

    @pool.workflow()
    def resize(ctx: RunContext, images: int) -> str:
        ctx.set_event_sync("resized", images // 2)
        go_on.wait(20)
        return "done"

    handle = await resize.run(4)
    async with fast_worker(pool):
        assert await asyncio.to_thread(handle.get_event_sync, "resized", 10) == 2
        go_on.set()
        await handle.result(timeout=10)
    assert await asyncio.to_thread(pool.get_event_sync, handle.id, "resized") == 2


async def test_values_that_cannot_be_published_are_refused_in_the_handler(
    pool: Workpool,
) -> None:
    refused: list[str] = []

    @pool.workflow()
    async def careless(ctx: RunContext, _: None) -> None:
        for bad in (math.inf, "x" * (pool.max_payload_bytes + 1), object()):
            try:
                await ctx.set_event("value", bad)
            except PayloadError as error:
                refused.append(str(error))
        try:
            ctx.set_event_sync("value", 1)  # blocks the loop it runs on: refused
        except RuntimeError as error:
            refused.append(str(error))
        await ctx.set_event("value", "fine")

    handle = await careless.run(None)
    async with fast_worker(pool):
        await handle.result(timeout=10)
    assert len(refused) == 4
    assert all("event 'value' of run" in message for message in refused[:3])
    assert "await ctx.set_event(" in refused[3]
    assert await handle.get_event("value") == "fine"


async def test_an_approval_workflow_answered_from_sync_code(pool: Workpool) -> None:
    @pool.workflow()
    async def expense(ctx: RunContext, amount: int) -> str:
        await ctx.set_event("status", "waiting for a manager")
        answer = await ctx.step.wait_for_event("manager", "decision", timeout=timedelta(days=3))
        await ctx.set_event("status", f"decided: {answer}")
        return "paid" if answer == "approve" else "refused"

    handle = await expense.run(120)
    async with fast_worker(pool):
        status = await asyncio.to_thread(handle.get_event_sync, "status", 10)
        assert status == "waiting for a manager"
        await wait_until(lambda: suspended(pool, handle.id))
        await asyncio.to_thread(handle.send_event_sync, "decision", "approve")
        assert await handle.result(timeout=10) == "paid"
    assert await handle.get_event("status") == "decided: approve"


@pytest.mark.slow
async def test_a_wait_survives_the_death_of_its_worker_and_loses_no_event(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    first = workers.start()
    handles = await pool.enqueue_many(
        [process_app.awaiting.prepare("approval"), process_app.awaiting.prepare("approval")]
    )
    await pool.send_event(handles[1].id, "approval", "sent before the crash")
    await wait_until(lambda: suspended(pool, handles[0].id))
    first.send_signal(signal.SIGKILL)  # the run waits in the backend, not in the worker
    first.wait()
    await pool.send_event(handles[0].id, "approval", {"ok": True})  # no worker is alive
    assert (await pool.get_run(handles[0].id)).status == "queued"
    workers.start()
    assert await handles[0].result(timeout=30) == {"ok": True}
    assert await handles[1].result(timeout=30) == "sent before the crash"
    before = [row[0] for row in workers.lines("before")]
    assert sorted(before) == sorted(handle.id for handle in handles)  # each once
    [after] = [row for row in workers.lines("after") if row[0] == handles[0].id]
    assert after[1] != str(first.pid)
    await pool.aclose()
