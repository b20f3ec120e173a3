-- Migration 0014: the trace contexts stored with a run (workpool/tracing.py: the W3C
-- traceparent and tracestate of the span that enqueued it, as JSON text), written by the
-- enqueue and returned by every claim; NULL while tracing is off.

ALTER TABLE runs ADD COLUMN trace_context TEXT;

-- "<claim> <trace context>": the trace context of the send_event that last woke the run
-- from a suspension (its sender's span), after the number of the claim it woke.
ALTER TABLE runs ADD COLUMN woken_by TEXT;

PRAGMA user_version = 14;
