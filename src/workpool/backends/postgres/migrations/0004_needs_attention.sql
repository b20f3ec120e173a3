-- Migration 0004: the 'needs_attention' state, and what a step was called with (as
-- SQLite's migration 0017).
--
-- A run whose replay met saved steps that no longer fit its code stops in
-- 'needs_attention' (not terminal, holds no gate place) until an operator reruns it from
-- a step or cancels it. runs_of_batch now includes it (a batch's run in it is unfinished).

ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN (
    'scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'succeeded', 'failed',
    'canceled'
));

DROP INDEX runs_of_batch;
CREATE INDEX runs_of_batch ON runs (batch_id, id)
    WHERE batch_id IS NOT NULL
        AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention')
        AND NOT cancel_requested;

-- The latest rerun from a step (JSON {"step", "reason", "at"}), or NULL.
ALTER TABLE runs ADD COLUMN rerun_from text;

-- A step's position among the steps its run reached (in the order the code reached
-- them) and a hash of the arguments it was called with, where it has them.
ALTER TABLE steps ADD COLUMN position integer;
ALTER TABLE steps ADD COLUMN args_hash text;
