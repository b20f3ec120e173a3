"""A run enqueued in the caller's transaction (``connection=``) continues the caller's
trace, as any other run does: the trace context is stored with it."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.integration.conftest import fast_worker
from tests.integration.test_transactional_enqueue import async_transaction
from tests.postgres_server import PostgresServer
from workpool import RunContext, Workpool


@pytest.fixture
def backend_name() -> str:
    """Only PostgreSQL takes ``connection=``."""
    return "postgres"


async def test_a_run_enqueued_in_a_transaction_continues_the_callers_trace(
    pool: Workpool, spans: InMemorySpanExporter, postgres_server: PostgresServer
) -> None:
    @pool.workflow()
    def noop(ctx: RunContext, x: int) -> int:
        return x

    with trace.get_tracer("tests").start_as_current_span("request") as request:
        async with async_transaction("psycopg-async", postgres_server, True) as connection:
            handle = await noop.run(1, connection=connection)
    async with fast_worker(pool):
        await handle.result(timeout=30)

    finished = spans.get_finished_spans()
    assert {span.name for span in finished} >= {"request", "send noop", "process noop"}
    assert {span.context.trace_id for span in finished} == {request.get_span_context().trace_id}
