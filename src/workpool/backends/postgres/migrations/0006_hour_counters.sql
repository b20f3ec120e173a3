-- Migration 0006: per-hour counters of each pair (PairCounters), kept for a week beside
-- the per-minute ones kept for a day; hour = floor(now / 3600) * 3600. Each operation
-- adds to both in its transaction. The minutes still kept fill the hours they cover.
-- SQLite migration 0019.
CREATE TABLE hour_counters (
    hour bigint NOT NULL,
    queue text NOT NULL,
    workflow text NOT NULL,
    executions bigint NOT NULL DEFAULT 0,
    timed bigint NOT NULL DEFAULT 0,
    run_time double precision NOT NULL DEFAULT 0,
    succeeded bigint NOT NULL DEFAULT 0,
    failed bigint NOT NULL DEFAULT 0,
    canceled bigint NOT NULL DEFAULT 0,
    retried bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, queue, workflow)
);

INSERT INTO hour_counters (
    hour, queue, workflow, executions, timed, run_time, succeeded, failed, canceled, retried
)
SELECT
    minute / 3600 * 3600, queue, workflow, sum(executions), sum(timed), sum(run_time),
    sum(succeeded), sum(failed), sum(canceled), sum(retried)
FROM counters
GROUP BY minute / 3600, queue, workflow;
