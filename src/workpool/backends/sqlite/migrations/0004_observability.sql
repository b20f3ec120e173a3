-- Migration 0004: listing, counters, retention and re-runs (see backends/base.py).

ALTER TABLE runs ADD COLUMN retry_of TEXT;    -- the run this one re-runs
ALTER TABLE runs ADD COLUMN retried_as TEXT;  -- the run that re-runs this one

-- list_runs: each (queue, workflow, status) in id order; get_stats counts active runs
-- of a pair from it, and cancel_many walks its active ranges. Ids begin with their
-- creation time, so id order is creation order. It replaces the two indexes of active
-- runs, so a claim rewrites one index entry more than before, not three.
CREATE INDEX runs_listed ON runs (queue, workflow, status, id);
DROP INDEX runs_active_by_created;
DROP INDEX runs_active_by_workflow;

-- purge: terminal runs, oldest finished first.
CREATE INDEX runs_finished ON runs (finished_at)
    WHERE status IN ('succeeded', 'failed', 'canceled');

-- Every (queue, workflow) that has had a run: what list_runs and get_stats walk.
CREATE TABLE run_pairs (
    queue TEXT NOT NULL,
    workflow TEXT NOT NULL,
    PRIMARY KEY (queue, workflow)
) WITHOUT ROWID;

INSERT OR IGNORE INTO run_pairs (queue, workflow) SELECT DISTINCT queue, workflow FROM runs;

-- A trigger, so no path that stores a run (enqueue, children, hooks, re-runs) can
-- forget its pair.
CREATE TRIGGER runs_remember_pair AFTER INSERT ON runs
BEGIN
    INSERT OR IGNORE INTO run_pairs (queue, workflow) VALUES (new.queue, new.workflow);
END;

-- Per-minute counters of each pair (PairCounters); minute = floor(now / 60) * 60.
CREATE TABLE counters (
    minute INTEGER NOT NULL,
    queue TEXT NOT NULL,
    workflow TEXT NOT NULL,
    executions INTEGER NOT NULL DEFAULT 0,
    timed INTEGER NOT NULL DEFAULT 0,
    run_time REAL NOT NULL DEFAULT 0,
    succeeded INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    canceled INTEGER NOT NULL DEFAULT 0,
    retried INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, workflow)
) WITHOUT ROWID;

PRAGMA user_version = 4;
