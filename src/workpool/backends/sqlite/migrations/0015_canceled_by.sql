-- Migration 0015: the trace context of the cancel that asked a running run to stop (its
-- caller's span, workpool/tracing.py), written with the request and returned by the
-- lease renewals that report it; NULL while tracing is off or no cancel was requested.

ALTER TABLE runs ADD COLUMN canceled_by TEXT;

PRAGMA user_version = 15;
