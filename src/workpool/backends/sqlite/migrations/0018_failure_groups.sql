-- Migration 0018: failed runs counted by (workflow, error type), kept by every operation
-- that ends a run failed or deletes a failed run (backends/contract/recovery.py), so the
-- failures view reads O(groups) rows. Filled here from the failed runs already stored.

CREATE TABLE failure_groups (
    workflow TEXT NOT NULL,
    error_type TEXT NOT NULL,          -- the stored error's "type" ('' if none)
    count INTEGER NOT NULL,
    first_seen REAL NOT NULL,          -- finished_at of the earliest failure counted
    last_seen REAL NOT NULL,           -- finished_at of the latest
    example_run_id TEXT,               -- the latest failed run; NULL once it is deleted
    PRIMARY KEY (workflow, error_type)
);

INSERT INTO failure_groups (workflow, error_type, count, first_seen, last_seen, example_run_id)
SELECT
    workflow,
    CASE WHEN json_valid(error) THEN coalesce(json_extract(error, '$.type'), '') ELSE '' END
        AS error_type,
    count(*),
    min(coalesce(finished_at, created_at)),
    max(coalesce(finished_at, created_at)),
    max(id)
FROM runs WHERE status = 'failed'
GROUP BY 1, 2;

PRAGMA user_version = 18;
