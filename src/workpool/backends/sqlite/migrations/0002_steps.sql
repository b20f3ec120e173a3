-- Migration 0002: steps, child runs and the 'suspended' state.
--
-- SQLite cannot alter a CHECK constraint, so the runs table is rebuilt the documented
-- way (create, copy, drop, rename) and its indexes made again. The migrator runs with
-- foreign keys off, so dropping the old table does not cascade to idempotency_keys,
-- whose reference to "runs" then names the new table.

CREATE TABLE runs_new (
    id TEXT NOT NULL PRIMARY KEY,
    workflow TEXT NOT NULL,
    queue TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN (
        'scheduled', 'queued', 'running', 'suspended', 'succeeded', 'failed', 'canceled'
    )),
    attempts INTEGER NOT NULL DEFAULT 0,        -- claims so far, minus suspensions
    input TEXT NOT NULL,                        -- JSON
    output TEXT,                                -- JSON, once succeeded
    error TEXT,                                 -- JSON {"type", "message", "traceback"}
    retry TEXT,                                 -- JSON retry policy, or NULL: one attempt
    hooks TEXT NOT NULL DEFAULT '[]',           -- JSON list of completion hooks
    created_at REAL NOT NULL,
    available_at REAL NOT NULL,                 -- when the run may (next) start
    started_at REAL,                            -- when the latest attempt was claimed
    finished_at REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    cancel_reason TEXT,
    worker_id TEXT,                             -- the worker that made the latest claim
    lease_token TEXT,                           -- set only while running
    lease_expires_at REAL,                      -- set only while running
    lease_losses INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT,
    wake_at REAL,                               -- suspended with a timer: when it is due
    parent_run_id TEXT,                         -- the run whose step started this one
    parent_step TEXT,                           -- the parent's step awaiting this run
    has_steps INTEGER NOT NULL DEFAULT 0 CHECK (has_steps IN (0, 1))
);

INSERT INTO runs_new (
    id, workflow, queue, status, attempts, input, output, error, retry, hooks, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, worker_id,
    lease_token, lease_expires_at, lease_losses, idempotency_key
)
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, hooks, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, worker_id,
    lease_token, lease_expires_at, lease_losses, idempotency_key
FROM runs;

DROP TABLE runs;

ALTER TABLE runs_new RENAME TO runs;

-- claim: oldest queued run of a queue.
CREATE INDEX runs_queued_by_queue ON runs (queue, available_at) WHERE status = 'queued';

-- claim (promote) and next_wake_at: earliest scheduled run of a queue.
CREATE INDEX runs_scheduled_by_queue ON runs (queue, available_at) WHERE status = 'scheduled';

-- claim (promote) and next_wake_at: earliest timer of a queue's suspended runs.
CREATE INDEX runs_suspended_by_queue ON runs (queue, wake_at)
    WHERE status = 'suspended' AND wake_at IS NOT NULL;

-- claim (reap) and next_wake_at: earliest lease expiry of a queue.
CREATE INDEX runs_running_by_queue ON runs (queue, lease_expires_at) WHERE status = 'running';

-- cancel_many without a workflow: active runs by creation time.
CREATE INDEX runs_active_by_created ON runs (created_at)
    WHERE status IN ('scheduled', 'queued', 'running', 'suspended');

-- cancel_many with a workflow: active runs of a workflow by creation time.
CREATE INDEX runs_active_by_workflow ON runs (workflow, created_at)
    WHERE status IN ('scheduled', 'queued', 'running', 'suspended');

-- get_children, and the cascade of a cancel to the children a run awaits.
CREATE INDEX runs_by_parent ON runs (parent_run_id, created_at)
    WHERE parent_run_id IS NOT NULL;

-- Steps of a run, by name. Times as in runs; output and error are JSON text.
CREATE TABLE steps (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('run', 'workflow', 'emit', 'sleep')),
    status TEXT NOT NULL CHECK (status IN ('waiting', 'succeeded', 'failed', 'canceled')),
    attempts INTEGER NOT NULL,
    output TEXT,
    error TEXT,
    child_run_id TEXT,
    wake_at REAL,
    started_at REAL NOT NULL,
    finished_at REAL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;

PRAGMA user_version = 2;
