"""Span trees for the tracing tests' assertions: spans of the SDK, or their JSON lines
exported by a worker process, as the same small records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan


@dataclass(frozen=True)
class Recorded:
    """One ended span, as the tests read it."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: Mapping[str, Any]
    events: Sequence[str]
    links: Sequence[str] = ()
    """The span ids it links to."""
    status: str = "UNSET"
    start: int = 0
    """Nanoseconds since the epoch."""
    event_attributes: Sequence[Mapping[str, Any]] = field(default=())


def recorded(span: ReadableSpan) -> Recorded:
    """A span of the SDK as a Recorded."""
    context = span.get_span_context()
    assert context is not None
    return Recorded(
        name=span.name,
        kind=span.kind.name,
        trace_id=f"{context.trace_id:032x}",
        span_id=f"{context.span_id:016x}",
        parent_id=None if span.parent is None else f"{span.parent.span_id:016x}",
        attributes=dict(span.attributes or {}),
        events=[event.name for event in span.events],
        links=[f"{link.context.span_id:016x}" for link in span.links],
        status=span.status.status_code.name,
        start=span.start_time or 0,
        event_attributes=[dict(event.attributes or {}) for event in span.events],
    )


def from_json(document: Mapping[str, Any]) -> Recorded:
    """A span exported by tests/tracing/span_file.py as a Recorded."""
    return Recorded(
        name=document["name"],
        kind=document["kind"],
        trace_id=document["trace_id"],
        span_id=document["span_id"],
        parent_id=document["parent_id"],
        attributes=document["attributes"],
        events=document["events"],
        links=document["links"],
        status=document["status"],
        start=document["start"],
    )


def ancestors(span: Recorded, spans: Iterable[Recorded]) -> list[Recorded]:
    """The spans above ``span``, nearest first (as far as the recorded spans go)."""
    by_id = {each.span_id: each for each in spans}
    chain = []
    parent = span.parent_id
    while parent is not None and parent in by_id:
        chain.append(by_id[parent])
        parent = by_id[parent].parent_id
    return chain


def named(spans: Iterable[Recorded], name: str) -> list[Recorded]:
    """The spans called ``name``, in the order they ended."""
    return [span for span in spans if span.name == name]


def render(spans: Sequence[Recorded]) -> str:
    """The spans as an indented tree, children in the order they started (for
    messages, and the README's example)."""
    ids = {span.span_id for span in spans}
    children: dict[str | None, list[Recorded]] = {}
    for span in spans:
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda span: span.start):
            extra = [f"{key}={span.attributes[key]}" for key in _SHOWN if key in span.attributes]
            events = f"  events: {', '.join(span.events)}" if span.events else ""
            links = "  (linked)" if span.links else ""
            status = "  ERROR" if span.status == "ERROR" else ""
            line = f"{'  ' * depth}{span.name} [{span.kind}] {' '.join(extra)}"
            lines.append(f"{line}{status}{links}{events}".rstrip())
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


_SHOWN = ("workpool.attempt", "workpool.step.replayed", "workpool.outcome")
