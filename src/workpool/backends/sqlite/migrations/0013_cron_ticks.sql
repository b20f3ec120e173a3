-- Migration 0013: each cron trigger's latest run, judged by its overlap policy at the next
-- tick, and the ticks that started no run (Backend.start_tick, issue 23). A trigger is
-- (workflow, trigger_id): its id is unique within its workflow.

CREATE TABLE trigger_runs (
    workflow TEXT NOT NULL,
    trigger_id TEXT NOT NULL,
    run_id TEXT NOT NULL,              -- the run start_tick last created for the trigger
    PRIMARY KEY (workflow, trigger_id)
) WITHOUT ROWID;

CREATE TABLE skipped_ticks (
    id INTEGER PRIMARY KEY,            -- recording order; the newest 100 per trigger are kept
    workflow TEXT NOT NULL,
    trigger_id TEXT NOT NULL,
    scheduled_at REAL NOT NULL,        -- the tick's time, seconds since the epoch
    reason TEXT NOT NULL,              -- 'previous_run_active' | 'buffer_full'
    run_id TEXT NOT NULL,              -- the trigger's active run that made it skip
    recorded_at REAL NOT NULL
);

CREATE INDEX skipped_ticks_by_trigger ON skipped_ticks (workflow, trigger_id, id);
CREATE INDEX skipped_ticks_by_time ON skipped_ticks (scheduled_at);

PRAGMA user_version = 13;
