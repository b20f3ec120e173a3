-- Migration 0019: the trace context stored with a run (workpool/tracing.py: the W3C
-- traceparent and tracestate of the span that enqueued it, as JSON text), written by the
-- enqueue and returned by every claim; NULL while tracing is off.

ALTER TABLE runs ADD COLUMN trace_context TEXT;

PRAGMA user_version = 19;
