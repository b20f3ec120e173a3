"""A span exporter that appends each ended span to a file as one JSON line: what a
worker process of the tracing tests exports, for the test to read."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class SpanFile(SpanExporter):
    """Appends spans to ``path``, one JSON object a line (one write per span, O_APPEND:
    the lines of several processes do not interleave)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for span in spans:
                os.write(descriptor, (json.dumps(describe(span)) + "\n").encode())
        finally:
            os.close(descriptor)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release: each export opens and closes the file."""


def describe(span: ReadableSpan) -> dict[str, Any]:
    """A span as the JSON object of its line (``trees.from_json`` reads it back)."""
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_id": None if span.parent is None else f"{span.parent.span_id:016x}",
        "attributes": dict(span.attributes or {}),
        "events": [event.name for event in span.events],
        "links": [f"{link.context.span_id:016x}" for link in span.links],
        "status": span.status.status_code.name,
        "start": span.start_time,
        "end": span.end_time,
        "pid": os.getpid(),
    }


def read(path: Path) -> list[dict[str, Any]]:
    """The spans exported to ``path`` so far."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]
