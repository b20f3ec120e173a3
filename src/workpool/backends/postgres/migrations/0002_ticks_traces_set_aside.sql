-- Migration 0002: what SQLite's migrations 0013 to 0015 added, runs set aside, and
-- counts as wide as the other backends store them.
--
-- Each cron trigger's latest run, judged by its overlap policy at the next tick, and the
-- ticks that started no run (Backend.start_tick). A trigger is (workflow, trigger_id).
CREATE TABLE trigger_runs (
    workflow text NOT NULL,
    trigger_id text NOT NULL,
    run_id text NOT NULL,              -- the run start_tick last created for the trigger
    PRIMARY KEY (workflow, trigger_id)
);

CREATE TABLE skipped_ticks (
    id bigserial PRIMARY KEY,          -- recording order; the newest 100 per trigger are kept
    workflow text NOT NULL,
    trigger_id text NOT NULL,
    scheduled_at double precision NOT NULL,
    reason text NOT NULL CHECK (reason IN ('previous_run_active', 'buffer_full')),
    run_id text NOT NULL,              -- the trigger's active run that made it skip
    recorded_at double precision NOT NULL
);

CREATE INDEX skipped_ticks_by_trigger ON skipped_ticks (workflow, trigger_id, id);
CREATE INDEX skipped_ticks_by_time ON skipped_ticks (scheduled_at, id);

-- The trace context stored with a run by its enqueue (workpool/tracing.py), returned by
-- every claim; NULL while tracing is off.
ALTER TABLE runs ADD COLUMN trace_context text;

-- "<claim> <trace context>": the trace context of the send_event that last woke the run
-- from a suspension, after the number of the claim it woke.
ALTER TABLE runs ADD COLUMN woken_by text;

-- A claim found the run's record corrupt (a value its column's type takes but workpool
-- cannot, such as NaN) and set it aside: never claimed or reaped again.
ALTER TABLE runs ADD COLUMN set_aside boolean NOT NULL DEFAULT false;

-- Counts and limits up to workpool's MAX_COUNT (2**53 - 1, workpool/validation.py), as
-- the other backends store them: 32-bit integers stopped at 2**31 - 1.
ALTER TABLE runs
    ALTER COLUMN attempts TYPE bigint,
    ALTER COLUMN lease_losses TYPE bigint,
    ALTER COLUMN gate_limit TYPE bigint,
    ALTER COLUMN claims TYPE bigint,
    ALTER COLUMN priority TYPE bigint;
ALTER TABLE steps ALTER COLUMN attempts TYPE bigint;
ALTER TABLE gates ALTER COLUMN admitted TYPE bigint;
ALTER TABLE queues ALTER COLUMN max_parallelism TYPE bigint;
ALTER TABLE workflows ALTER COLUMN max_concurrency TYPE bigint;
ALTER TABLE batches
    ALTER COLUMN total TYPE bigint,
    ALTER COLUMN succeeded TYPE bigint,
    ALTER COLUMN failed TYPE bigint,
    ALTER COLUMN canceled TYPE bigint;

-- The trace context of the cancel of a running run (its renewal hands it to the worker,
-- which links the execution it ends to it; SQLite migration 0015).
ALTER TABLE runs ADD COLUMN canceled_by text;
