"""Tracing in-process, on every backend: the spans of a run with a retry, steps, a
sleep, a child (and its child), an event and a completion callback, recorded by the
SDK's in-memory exporter."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from tests.tracing.conftest import unset_global_provider
from tests.tracing.traced_app import define
from tests.tracing.trees import Recorded, ancestors, named, recorded, render
from workpool import RunContext, Workpool, tracing


async def suspended_on_event(pool: Workpool, run_id: str) -> bool:
    run = await pool.get_run(run_id)
    steps = await pool.get_steps(run_id)
    return run.status == "suspended" and any(step.name == "approval" for step in steps)


async def test_one_trace_from_the_callers_span_through_every_execution(
    pool: Workpool, spans: InMemorySpanExporter
) -> None:
    workflows = define(pool)
    order, notify = workflows.order, workflows.notify
    with trace.get_tracer("test").start_as_current_span("checkout") as root:
        handle = await order.run(42, on_complete=notify)
    async with fast_worker(pool):
        await wait_until(lambda: suspended_on_event(pool, handle.id), limit=30)
        await handle.send_event("approve", "ana")
        assert await handle.result(timeout=30) == "42 approved by ana"
        await wait_until(lambda: any_named(spans, "process notify"), limit=30)
    every = [recorded(span) for span in spans.get_finished_spans()]
    tree = render(every)
    trace_id = f"{root.get_span_context().trace_id:032x}"
    elsewhere = [*named(every, "process notify"), *named(every, "send_event approve")]
    in_trace = [span for span in every if span not in elsewhere]
    assert {span.trace_id for span in in_trace} == {trace_id}, tree

    [send] = named(every, "send order")
    assert send.kind == "PRODUCER"
    assert send.parent_id == f"{root.get_span_context().span_id:016x}"
    assert send.attributes["messaging.system"] == "workpool"
    assert send.attributes["messaging.operation.type"] == "send"
    assert send.attributes["messaging.destination.name"] == "default"
    assert send.attributes["messaging.message.id"] == handle.id
    assert send.attributes["workpool.priority"] == 0

    executions = named(every, "process order")
    # attempt 1 (fails), attempt 2: to the sleep, to the child, to the event, to the end
    assert [span.attributes["workpool.attempt"] for span in executions] == [1, 2, 2, 2, 2], tree
    assert all(span.parent_id == send.span_id and span.kind == "CONSUMER" for span in executions)
    first = executions[0]
    assert first.status == "ERROR"
    assert "exception" in first.events
    assert first.attributes["workpool.outcome"] == "retry"
    assert [span.attributes["workpool.outcome"] for span in executions[1:]] == [
        "suspended",
        "suspended",
        "suspended",
        "succeeded",
    ]
    assert first.attributes["messaging.message.id"] == handle.id
    assert first.attributes["workpool.run_id"] == handle.id
    assert first.attributes["workpool.workflow"] == "order"

    # The sleep and the wait are span events of the segment that began them.
    assert "sleep" in executions[1].events
    assert "suspended" in executions[1].events
    assert "wait for event" in executions[3].events

    # A step span per step call; a replay says so.
    reserves = named(every, "step reserve")
    assert [span.attributes.get("workpool.step.replayed", False) for span in reserves] == [
        False,
        True,
        True,
        True,
        True,
    ]
    assert [ancestors(span, every)[0] for span in reserves] == executions

    # The child's executions are under the step that awaits it; so is the grandchild.
    [charge_step] = [span for span in named(every, "step charge") if not replayed(span)]
    child_runs = named(every, "process charge")
    assert child_runs
    assert all(charge_step in ancestors(span, every) for span in child_runs)
    grandchild = named(every, "process ledger")
    assert grandchild
    assert all(charge_step in ancestors(span, every) for span in grandchild)
    assert all(root_span(span, every).name == "checkout" for span in in_trace)

    # The event's sender is linked from the execution it woke, and from no other.
    [sent] = named(every, "send_event approve")
    assert sent.kind == "PRODUCER"
    assert sent.attributes["workpool.run_id"] == handle.id
    assert executions[4].links == [sent.span_id]
    assert all(not span.links for span in executions[:4])

    # The completion callback: a trace of its own, linked to the run's enqueue.
    [hooked] = named(every, "process notify")
    assert hooked.trace_id != trace_id
    assert hooked.links == [send.span_id]


async def test_links_instead_of_parents_when_the_pool_says_so(
    backend_url: str, spans: InMemorySpanExporter
) -> None:
    pool = Workpool(backend_url, app="tests", trace_links=True)
    try:

        @pool.workflow()
        async def hello(ctx: RunContext, name: str) -> str:
            greeting: str = await ctx.step.run("greet", lambda: f"hello {name}")
            return greeting

        with trace.get_tracer("test").start_as_current_span("request"):
            handle = await hello.run("ana")
        async with fast_worker(pool):
            assert await handle.result(timeout=30) == "hello ana"
    finally:
        await pool.aclose()
        pool.close()
    every = [recorded(span) for span in spans.get_finished_spans()]
    [send] = named(every, "send hello")
    [execution] = named(every, "process hello")
    assert execution.parent_id is None
    assert execution.links == [send.span_id]
    assert execution.trace_id != send.trace_id
    [step] = named(every, "step greet")
    assert step.parent_id == execution.span_id


async def test_errors_timeouts_and_cancels_say_so(
    pool: Workpool, spans: InMemorySpanExporter
) -> None:
    @pool.workflow(timeout=0.2)
    async def slow(ctx: RunContext, _: None) -> None:
        await asyncio.sleep(30)

    @pool.workflow()
    async def broken(ctx: RunContext, _: None) -> None:
        await ctx.step.run("explode", explode)

    @pool.workflow()
    async def endless(ctx: RunContext, _: None) -> None:
        await asyncio.sleep(60)

    timed, failed, canceled = await slow.run(None), await broken.run(None), await endless.run(None)
    async with fast_worker(pool):
        await wait_until(lambda: running(pool, canceled.id), limit=30)
        await canceled.cancel()
        for handle in (timed, failed, canceled):
            await wait_until(lambda handle=handle: ended(pool, handle.id), limit=30)
    every = [recorded(span) for span in spans.get_finished_spans()]
    [timeout] = named(every, "process slow")
    assert timeout.status == "ERROR"
    assert timeout.attributes["workpool.timed_out"] is True
    assert timeout.attributes["error.type"] == "RunTimeoutError"
    [step] = named(every, "step explode")
    assert step.status == "ERROR"
    assert step.attributes["error.type"] == "KeyError"
    [failure] = named(every, "process broken")
    assert failure.status == "ERROR"
    assert failure.attributes["workpool.outcome"] == "failed"
    [cancel] = named(every, "process endless")
    assert cancel.attributes["workpool.outcome"] == "canceled"
    assert "canceled" in cancel.events
    [request] = named(every, "cancel")
    assert request.kind == "CLIENT"
    assert request.attributes["workpool.run_id"] == canceled.id
    assert request.attributes["workpool.cancel.result"] == "requested"


async def test_no_span_without_a_tracer_provider(pool: Workpool) -> None:
    @pool.workflow()
    async def quiet(ctx: RunContext, _: None) -> bool:
        return trace.get_current_span().is_recording()

    handle = await quiet.run(None)
    async with fast_worker(pool):
        assert await handle.result(timeout=30) is False
    assert tracing.tracer() is None
    assert (await pool.get_run(handle.id)).status == "succeeded"


@pytest.mark.parametrize("batch", [False, True])
async def test_enqueue_many_and_batch_are_one_span_with_the_count(
    pool: Workpool, spans: InMemorySpanExporter, batch: bool
) -> None:
    @pool.workflow()
    async def item(ctx: RunContext, n: int) -> int:
        return n

    runs = [item.prepare(n) for n in range(3)]
    if batch:
        await pool.batch(runs)
    else:
        await pool.enqueue_many(runs)
    [send] = [recorded(span) for span in spans.get_finished_spans()]
    assert send.name == "send item"
    assert send.attributes["messaging.batch.message_count"] == 3


def explode() -> None:
    raise KeyError("no such sku")


def replayed(span: Recorded) -> bool:
    return bool(span.attributes.get("workpool.step.replayed"))


def root_span(span: Recorded, spans: list[Recorded]) -> Recorded:
    chain = ancestors(span, spans)
    return chain[-1] if chain else span


def any_named(spans: InMemorySpanExporter, name: str) -> bool:
    return any(span.name == name for span in spans.get_finished_spans())


async def running(pool: Workpool, run_id: str) -> bool:
    return (await pool.get_run(run_id)).status == "running"


async def ended(pool: Workpool, run_id: str) -> bool:
    return (await pool.get_run(run_id)).status in ("succeeded", "failed", "canceled")


def test_a_provider_set_later_is_seen_when_tracing_looks_again() -> None:
    assert tracing.refresh() is None
    trace.set_tracer_provider(TracerProvider())
    try:
        assert tracing.tracer() is None  # off until it looks again (not on every call)
        assert tracing.refresh() is not None
    finally:
        unset_global_provider()
        tracing.refresh()


def test_a_sync_callers_span_is_the_enqueue_spans_parent(
    backend_url: str, spans: InMemorySpanExporter
) -> None:
    pool = Workpool(backend_url, app="tests")
    try:

        @pool.workflow()
        async def hello(ctx: RunContext, name: str) -> str:
            return name

        with trace.get_tracer("test").start_as_current_span("view") as view:
            hello.run_sync("ana")  # through the portal's loop
    finally:
        pool.close()
    [send] = [recorded(span) for span in spans.get_finished_spans() if span.name == "send hello"]
    assert send.parent_id == f"{view.get_span_context().span_id:016x}"
