"""A cancel carries its caller's trace context to what it ends, on every backend: the
execution of a running run links the ``cancel`` span (the client's, or the one the
dashboard's cancel action makes inside its request's span); a run canceled before it
ran has no execution to link, and the ``cancel`` span is the record."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from opentelemetry import trace
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from tests.tracing.test_tracing import ended, running
from tests.tracing.test_web_request import post
from tests.tracing.trees import ancestors, named, recorded, render
from workpool import RunContext, Workpool
from workpool.dashboard import create_dashboard
from workpool.dashboard.forms import CSRF_COOKIE, CSRF_FIELD
from workpool.definitions import Workflow

CSRF = "c" * 43
"""A CSRF token of the right length, sent as both the cookie and the form's field."""


def define_endless(pool: Workpool) -> Workflow[None, None]:
    @pool.workflow()
    async def endless(ctx: RunContext, _: None) -> None:
        await asyncio.sleep(60)

    return endless


async def test_a_running_runs_execution_links_the_cancel(
    pool: Workpool, spans: InMemorySpanExporter
) -> None:
    endless = define_endless(pool)
    handle = await endless.run(None)
    async with fast_worker(pool):
        await wait_until(lambda: running(pool, handle.id), limit=30)
        with trace.get_tracer("test").start_as_current_span("operator") as operator:
            assert await pool.cancel(handle.id, "enough") == "requested"
        await wait_until(lambda: ended(pool, handle.id), limit=30)
    every = [recorded(span) for span in spans.get_finished_spans()]
    [cancel] = named(every, "cancel")
    assert cancel.parent_id == f"{operator.get_span_context().span_id:016x}"
    assert cancel.attributes["workpool.cancel.result"] == "requested"
    [execution] = named(every, "process endless")
    assert execution.attributes["workpool.outcome"] == "canceled"
    assert execution.links == [cancel.span_id], render(every)
    [link] = [span.links[0] for span in spans.get_finished_spans() if span.kind.name == "CONSUMER"]
    assert link.context.trace_id == int(cancel.trace_id, 16)
    assert dict(link.attributes or {}) == {"workpool.link": "canceled by"}


async def test_a_queued_run_canceled_has_the_cancel_span_as_its_record(
    pool: Workpool, spans: InMemorySpanExporter
) -> None:
    endless = define_endless(pool)
    handle = await endless.run(None)
    with trace.get_tracer("test").start_as_current_span("operator") as operator:
        assert await pool.cancel(handle.id, "not needed") == "canceled"
    every = [recorded(span) for span in spans.get_finished_spans()]
    [cancel] = named(every, "cancel")
    assert cancel.kind == "CLIENT"
    assert cancel.trace_id == f"{operator.get_span_context().trace_id:032x}"
    assert cancel.attributes["workpool.cancel.result"] == "canceled"
    assert cancel.attributes["messaging.message.id"] == handle.id
    assert cancel.attributes["workpool.run_id"] == handle.id
    # It never executes: no span of an execution, so nothing that could carry a link.
    assert (await pool.get_run(handle.id)).status == "canceled"
    assert not named(every, "process endless")


async def test_the_dashboards_cancel_is_linked_from_the_execution_it_ends(
    pool: Workpool, spans: InMemorySpanExporter
) -> None:
    endless = define_endless(pool)
    handle = await endless.run(None)
    dashboard = OpenTelemetryMiddleware(create_dashboard(pool))
    form = urlencode({"run_id": handle.id, "confirmed": "1", CSRF_FIELD: CSRF}).encode()
    headers = [
        (b"content-type", b"application/x-www-form-urlencoded"),
        (b"cookie", f"{CSRF_COOKIE}={CSRF}".encode()),
    ]
    async with fast_worker(pool):
        await wait_until(lambda: running(pool, handle.id), limit=30)
        status, _ = await post(dashboard, "/actions/cancel", form, headers)
        assert status == 303
        await wait_until(lambda: ended(pool, handle.id), limit=30)
    every = [recorded(span) for span in spans.get_finished_spans()]
    [server] = [span for span in every if span.kind == "SERVER"]
    [cancel] = named(every, "cancel")
    assert server in ancestors(cancel, every), render(every)
    [execution] = named(every, "process endless")
    assert execution.links == [cancel.span_id], render(every)
