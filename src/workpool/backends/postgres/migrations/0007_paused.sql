-- Migration 0007: the 'paused' state (as SQLite's migration 0020).
--
-- An operator pauses a queued or scheduled run: it leaves every queue index (never
-- claimed, promoted or admitted) until resumed or canceled; its deadline still counts, so
-- runs_deadlines includes it, and runs_of_batch too (a batch's paused run is unfinished).

ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN (
    'scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused', 'succeeded',
    'failed', 'canceled'
));

DROP INDEX runs_deadlines;
CREATE INDEX runs_deadlines ON runs (queue, deadline)
    WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended', 'paused');

DROP INDEX runs_of_batch;
CREATE INDEX runs_of_batch ON runs (batch_id, id)
    WHERE batch_id IS NOT NULL
        AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused')
        AND NOT cancel_requested;
