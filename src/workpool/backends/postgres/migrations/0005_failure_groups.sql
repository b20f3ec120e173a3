-- Migration 0005: failed runs counted by (workflow, error type), kept by every operation
-- that ends a run failed or deletes a failed run (backends/contract/recovery.py), so the
-- failures view reads O(groups) rows. Filled here from the failed runs already stored.
CREATE TABLE failure_groups (
    workflow text NOT NULL,
    error_type text NOT NULL,              -- the stored error's "type" ('' if none)
    count bigint NOT NULL,
    first_seen double precision NOT NULL,  -- finished_at of the earliest failure counted
    last_seen double precision NOT NULL,   -- finished_at of the latest
    example_run_id text,                   -- the latest failed run; NULL once it is deleted
    PRIMARY KEY (workflow, error_type)
);

CREATE FUNCTION pg_temp.error_type(error text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN coalesce(error::jsonb ->> 'type', '');
EXCEPTION WHEN others THEN
    RETURN '';
END $$;

INSERT INTO failure_groups (workflow, error_type, count, first_seen, last_seen, example_run_id)
SELECT
    workflow, pg_temp.error_type(error), count(*), min(coalesce(finished_at, created_at)),
    max(coalesce(finished_at, created_at)), max(id)
FROM runs WHERE status = 'failed'
GROUP BY 1, 2;
