"""OpenTelemetry spans of runs, made only while the application has set a tracer
provider (README "Tracing").

workpool calls the OpenTelemetry API alone (the ``otel`` extra); the SDK, exporters and
sampling stay the application's. ``tracer()`` is the one check the hot paths make: it
is None without the API or while no provider is set, and callers then skip every
other call of this module. Span names and attributes follow the OpenTelemetry messaging
conventions (``messaging.*``), plus workpool's own (``workpool.*``).

The trace context stored with a run (``NewRun.trace_context``) is this module's text:
JSON of the W3C ``traceparent`` and ``tracestate`` of the span that enqueued it, with
``"link": true`` when its executions link to it instead of taking it as parent (the
runs of completion hooks and batch callbacks).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import trace as otel
    from opentelemetry.context import Context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _API = True
except ImportError:  # the otel extra is not installed: tracing stays off
    _API = False

if TYPE_CHECKING:
    from opentelemetry.trace import Link, Span, SpanContext, Tracer
    from opentelemetry.util.types import AttributeValue

__all__ = [
    "SYSTEM",
    "Sending",
    "abandoned",
    "annotate",
    "calling",
    "canceled_by",
    "current_ids",
    "ended",
    "link_context",
    "note",
    "processing",
    "record_error",
    "refresh",
    "sending",
    "step_span",
    "stored",
    "tracer",
]

SYSTEM = "workpool"
"""``messaging.system`` of every span."""

RECHECK_SECONDS = 1.0
"""While no provider is set, how often ``tracer()`` looks again: the API's own look
reads ``os.environ`` (microseconds), too much for every enqueue."""

_provider: object = None
"""The provider ``_tracer`` was made from (the global one, when last looked at)."""
_tracer: Tracer | None = None
_look_again_at = 0.0
"""While off: the monotonic time after which ``tracer()`` looks at the provider again."""
_NO_SPAN: AbstractContextManager[None] = nullcontext()


def tracer() -> Tracer | None:
    """workpool's tracer, or None while tracing is off (no API, no provider set).

    Cheap enough for every enqueue and execution: while off, a clock read (the global
    provider is looked at again once a second, so one set later is seen within a
    second; ``refresh()`` makes it at once); while on, one read of the provider."""
    global _look_again_at
    if _tracer is None:
        if not _API or time.monotonic() < _look_again_at:
            return None
        _look_again_at = time.monotonic() + RECHECK_SECONDS
    return _current()


def refresh() -> Tracer | None:
    """Look at the global tracer provider now (after setting it later than the first
    enqueue or execution, to trace at once); return ``tracer()``."""
    global _look_again_at
    _look_again_at = 0.0
    return tracer()


def _current() -> Tracer | None:
    global _provider, _tracer
    provider = otel.get_tracer_provider()
    if provider is not _provider:
        _provider = provider
        unset = isinstance(provider, otel.ProxyTracerProvider | otel.NoOpTracerProvider)
        _tracer = None if unset else provider.get_tracer("workpool")
    return _tracer


# -- stored context ---------------------------------------------------------------------


def _stored(span: Span, *, link: bool = False) -> str:
    """The stored trace context of ``span`` (see the module's docstring)."""
    context = span.get_span_context()
    carrier: dict[str, Any] = {
        "traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-"
        f"{int(context.trace_flags):02x}"
    }
    if context.trace_state:
        carrier["tracestate"] = context.trace_state.to_header()
    if link:
        carrier["link"] = True
    return json.dumps(carrier, separators=(",", ":"))


def link_context(stored: str | None) -> str | None:
    """``stored`` made a link: what a run enqueued because another ended keeps."""
    if stored is None:
        return None
    carrier = json.loads(stored)
    carrier["link"] = True
    return json.dumps(carrier, separators=(",", ":"))


def _extracted(stored: str | None) -> tuple[Context, SpanContext, bool] | None:
    """The context stored (as a parent, its span's context, whether it is a link), or
    None for none or unreadable text."""
    if stored is None:
        return None
    try:
        carrier = json.loads(stored)
        extracted = TraceContextTextMapPropagator().extract(
            {key: carrier[key] for key in ("traceparent", "tracestate") if key in carrier}
        )
    except (ValueError, TypeError, AttributeError):
        return None
    context = otel.get_current_span(extracted).get_span_context()
    if not context.is_valid:
        return None
    return extracted, context, bool(carrier.get("link"))


def _parent_and_links(
    stored: str | None, links_only: bool, woken_by: str | None, claim: int
) -> tuple[Context | None, list[Link]]:
    """The parent context and the links of an execution (claim number ``claim``) of a
    run whose stored trace context is ``stored``, woken (``woken_by``) by an event."""
    links = []
    number, _, sender = (woken_by or "").partition(" ")
    woke = _extracted(sender) if number == str(claim) else None
    if woke is not None:
        links.append(otel.Link(woke[1], {"workpool.link": "woken by send_event"}))
    found = _extracted(stored)
    if found is None:
        return None, links
    parent, context, link = found
    if links_only or link:
        return None, [otel.Link(context, {"workpool.link": "enqueued by"}), *links]
    return parent, links


# -- spans ------------------------------------------------------------------------------


class Sending:
    """The PRODUCER span of one enqueue (of one run or many): ``context`` is what each
    run it stores keeps (None while tracing is off)."""

    def __init__(self, span: Span | None) -> None:
        self._span = span
        self.context = None if span is None else _stored(span)

    def sent(self, runs: Sequence[tuple[str, str, int]]) -> None:
        """Describe the runs (id, queue, priority) the enqueue stores."""
        if self._span is None or not runs:
            return
        queues = {queue for _, queue, _ in runs}
        attributes: dict[str, AttributeValue] = {}
        if len(queues) == 1:
            attributes["messaging.destination.name"] = next(iter(queues))
        if len(runs) == 1:
            run_id, _, priority = runs[0]
            attributes["messaging.message.id"] = run_id
            attributes["workpool.run_id"] = run_id
            attributes["workpool.priority"] = priority
        self._span.set_attributes(attributes)


_OFF = Sending(None)


@contextmanager
def sending(workflows: Sequence[str], *, batch: bool = False) -> Iterator[Sending]:
    """A PRODUCER span ``send <workflow>`` (``send batch`` for runs of several
    workflows) around an enqueue of runs of ``workflows``; ``batch``: a batch of runs
    (counted by ``messaging.batch.message_count`` even for one)."""
    traced = tracer()
    if traced is None or not workflows:
        yield _OFF
        return
    names = set(workflows)
    workflow = next(iter(names)) if len(names) == 1 else None
    attributes: dict[str, AttributeValue] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
    }
    if workflow is not None:
        attributes["workpool.workflow"] = workflow
    if batch or len(workflows) > 1:
        attributes["messaging.batch.message_count"] = len(workflows)
    name = f"send {workflow}" if workflow is not None else "send batch"
    kind = otel.SpanKind.PRODUCER
    with _span(traced, name, kind=kind, attributes=attributes) as span:
        yield Sending(span)


@contextmanager
def processing(
    traced: Tracer,
    *,
    run_id: str,
    workflow: str,
    queue: str,
    attempt: int,
    trace_context: str | None,
    links_only: bool,
    woken_by: str | None = None,
    claim: int = 0,
) -> Iterator[Span]:
    """The CONSUMER span ``process <workflow>`` of one execution (claim number
    ``claim``) of a run: a child of the span that enqueued it (``trace_context``), or
    linked to it (``links_only``, or a hook's run); linked to the ``send_event`` that
    woke it for this claim (``woken_by``), if one did."""
    parent, links = _parent_and_links(trace_context, links_only, woken_by, claim)
    attributes: dict[str, AttributeValue] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": queue,
        "messaging.message.id": run_id,
        "workpool.run_id": run_id,
        "workpool.workflow": workflow,
        "workpool.attempt": attempt,
    }
    kind = otel.SpanKind.CONSUMER
    with traced.start_as_current_span(
        f"process {workflow}",
        # No stored context: a trace of its own, whatever the worker's context is.
        context=parent if parent is not None else Context(),
        kind=kind,
        attributes=attributes,
        links=links,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield span


_OUTCOMES = {"suspend": "suspended"}


def ended(
    span: Span,
    status: str,
    *,
    timed_out: bool,
    wake_at: float | None,
    waiting_on: Sequence[str],
    events: Sequence[str],
) -> None:
    """Describe how an execution ended (a ``Finish``'s status and wait): the outcome,
    a timeout, a cancel, and what a suspended run waits for (a span event: the span
    ends now, and the run's next execution is a span of its own)."""
    span.set_attribute("workpool.outcome", _OUTCOMES.get(status, status))
    if timed_out:
        span.set_attribute("workpool.timed_out", True)
    if status == "canceled":
        span.add_event("canceled")
    elif status == "suspend":
        waits: dict[str, AttributeValue] = {}
        if wake_at is not None:
            waits["workpool.wake_at"] = _iso(wake_at)
        if waiting_on:
            waits["workpool.waiting_on"] = list(waiting_on)
        if events:
            waits["workpool.events"] = list(events)
        span.add_event("suspended", waits)


def canceled_by(span: Span, stored: str | None) -> None:
    """Link an execution's span to the ``cancel`` that asked it to stop (``stored``:
    that span's context, as the lease renewal handed it over; nothing for None)."""
    found = _extracted(stored)
    if found is not None:
        span.add_link(found[1], {"workpool.link": "canceled by"})


def abandoned(span: Span) -> None:
    """The execution stopped without an outcome (its lease was lost, or the worker
    shut down): another execution will run the attempt again."""
    span.set_attribute("workpool.outcome", "abandoned")
    span.add_event("abandoned")


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, tz=UTC).isoformat()


@contextmanager
def calling(
    operation: str, name: str, run_id: str, attributes: Mapping[str, AttributeValue]
) -> Iterator[Span | None]:
    """A span ``name`` around a call on a run (``send_event``: PRODUCER, ``cancel``:
    CLIENT), None while off; its context is what the call hands the run (``stored``)."""
    traced = tracer()
    if traced is None:
        yield None
        return
    kind = otel.SpanKind.PRODUCER if operation == "send_event" else otel.SpanKind.CLIENT
    common: dict[str, AttributeValue] = {
        "messaging.system": SYSTEM,
        "messaging.operation.name": operation,
        "messaging.message.id": run_id,
        "workpool.run_id": run_id,
    }
    with _span(traced, name, kind=kind, attributes={**common, **attributes}) as span:
        yield span


def stored(span: Span | None) -> str | None:
    """The trace context of ``span`` (a ``calling`` span) as a run stores it."""
    return None if span is None else _stored(span)


def step_span(kind: str, name: str) -> AbstractContextManager[Span | None]:
    """An INTERNAL span ``step <name>`` around one call of a step (None while off):
    an exception out of it is recorded with status ERROR, the engine's unwinding of a
    suspended run is not."""
    traced = tracer()
    if traced is None:
        return _NO_SPAN
    attributes: dict[str, AttributeValue] = {
        "workpool.step": name,
        "workpool.step.kind": kind,
    }
    return _span(traced, f"step {name}", kind=otel.SpanKind.INTERNAL, attributes=attributes)


@contextmanager
def _span(
    traced: Tracer, name: str, *, kind: Any, attributes: Mapping[str, AttributeValue]
) -> Iterator[Span]:
    with traced.start_as_current_span(
        name,
        kind=kind,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except Exception as error:
            _failed(span, error)
            raise


def annotate(span: Span | None, attributes: Mapping[str, AttributeValue]) -> None:
    """Set attributes on ``span`` (a ``step_span``; nothing while off)."""
    if span is not None:
        span.set_attributes(attributes)


def _failed(span: Span, error: BaseException) -> None:
    span.record_exception(error)
    span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(otel.Status(otel.StatusCode.ERROR, f"{type(error).__name__}: {error}"))


def record_error(error: BaseException) -> None:
    """Record ``error`` on the active span with status ERROR (nothing while off)."""
    if not _API:
        return
    span = otel.get_current_span()
    if span.is_recording():
        _failed(span, error)


def note(name: str, attributes: Mapping[str, AttributeValue] | None = None) -> None:
    """Add the span event ``name`` to the active span (nothing while off)."""
    if not _API:
        return
    span = otel.get_current_span()
    if span.is_recording():
        span.add_event(name, attributes)


def current_ids() -> tuple[str, str] | None:
    """(trace id, span id) in hex of the active span, or None (for log records)."""
    if not _API:
        return None
    context = otel.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"
