-- Migration 0016: a run's deadline (seconds since the epoch; NULL: none), and the index
-- by which each claim finds, per queue, the waiting runs whose deadline has passed
-- (runs_deadlines: running runs are left out, their worker stops them).

ALTER TABLE runs ADD COLUMN deadline REAL;

CREATE INDEX runs_deadlines ON runs (queue, deadline)
    WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended');

PRAGMA user_version = 16;
