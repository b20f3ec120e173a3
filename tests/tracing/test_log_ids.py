"""JSON log lines carry the trace and span ids of the span active where they are logged."""

from __future__ import annotations

import json
import logging

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.integration.conftest import fast_worker
from workpool import RunContext, Workpool
from workpool.logs import JsonFormatter


def line(message: str) -> dict[str, object]:
    record = logging.LogRecord("workpool.test", logging.INFO, __file__, 1, message, (), None)
    document: dict[str, object] = json.loads(JsonFormatter().format(record))
    return document


def test_a_line_logged_in_a_span_names_it(spans: InMemorySpanExporter) -> None:
    with trace.get_tracer("test").start_as_current_span("request") as span:
        inside = line("in")
    context = span.get_span_context()
    assert inside["trace_id"] == f"{context.trace_id:032x}"
    assert inside["span_id"] == f"{context.span_id:016x}"
    assert "trace_id" not in line("out")


def test_no_ids_without_a_tracer_provider() -> None:
    with trace.get_tracer("test").start_as_current_span("request"):
        assert "trace_id" not in line("in")


async def test_a_handlers_lines_name_its_execution_span(
    pool: Workpool, spans: InMemorySpanExporter
) -> None:
    records: list[dict[str, object]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(json.loads(JsonFormatter().format(record)))

    @pool.workflow()
    def greet(ctx: RunContext, name: str) -> None:  # a sync handler, in its own thread
        ctx.logger.info("hello %s", name)

    keep = Keep()
    logging.getLogger("workpool.run.greet").addHandler(keep)
    try:
        handle = await greet.run("ana")
        async with fast_worker(pool):
            await handle.result(timeout=30)
    finally:
        logging.getLogger("workpool.run.greet").removeHandler(keep)
    [execution] = [span for span in spans.get_finished_spans() if span.name == "process greet"]
    [hello] = [record for record in records if record["message"] == f"run {handle.id}: hello ana"]
    assert hello["span_id"] == f"{execution.context.span_id:016x}"
    assert hello["trace_id"] == f"{execution.context.trace_id:032x}"
