-- Migration 0003: a run's deadline (seconds since the epoch; NULL: none), and the index
-- by which each claim finds, per queue, the waiting runs whose deadline has passed
-- (running runs are left out: their worker stops them). SQLite migration 0016.
ALTER TABLE runs ADD COLUMN deadline double precision;

CREATE INDEX runs_deadlines ON runs (queue, deadline)
    WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended');
