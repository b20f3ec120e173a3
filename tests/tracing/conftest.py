"""Fixtures of the tracing tests: the SDK's tracer provider set as the global one for
one test (and unset after it, so other tests of the process run untraced)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from tests.integration.conftest import pool, workers
from workpool import tracing

__all__ = ["pool", "spans", "workers"]


def unset_global_provider() -> None:
    """Forget the global tracer provider, as OpenTelemetry's own test helpers do: the API
    lets an application set it once per process."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span ended during the test, recorded by the SDK's in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    unset_global_provider()
    trace.set_tracer_provider(provider)
    tracing.refresh()  # not a second later: at once
    yield exporter
    provider.shutdown()
    unset_global_provider()
    tracing.refresh()
