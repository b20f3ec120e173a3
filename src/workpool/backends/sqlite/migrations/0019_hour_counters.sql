-- Migration 0019: per-hour counters of each pair (PairCounters), kept for a week beside
-- the per-minute ones kept for a day; hour = floor(now / 3600) * 3600. Each operation
-- adds to both in its transaction. The minutes still kept fill the hours they cover.
-- PostgreSQL migration 0006.

CREATE TABLE hour_counters (
    hour INTEGER NOT NULL,
    queue TEXT NOT NULL,
    workflow TEXT NOT NULL,
    executions INTEGER NOT NULL DEFAULT 0,
    timed INTEGER NOT NULL DEFAULT 0,
    run_time REAL NOT NULL DEFAULT 0,
    succeeded INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    canceled INTEGER NOT NULL DEFAULT 0,
    retried INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, queue, workflow)
) WITHOUT ROWID;

INSERT INTO hour_counters (
    hour, queue, workflow, executions, timed, run_time, succeeded, failed, canceled, retried
)
SELECT
    minute / 3600 * 3600, queue, workflow, sum(executions), sum(timed), sum(run_time),
    sum(succeeded), sum(failed), sum(canceled), sum(retried)
FROM counters
GROUP BY minute / 3600, queue, workflow;

PRAGMA user_version = 19;
