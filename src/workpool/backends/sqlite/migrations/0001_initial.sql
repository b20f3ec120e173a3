-- Migration 0001: the runs table, idempotency keys, and the indexes of every hot path.
--
-- Times are REAL seconds since the epoch, from the caller's clock. JSON columns hold
-- the text the client stored, unchanged. The last statement records the schema
-- version in PRAGMA user_version; the migrator checks it equals this file's number.

CREATE TABLE runs (
    id TEXT NOT NULL PRIMARY KEY,
    workflow TEXT NOT NULL,
    queue TEXT NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'canceled')),
    attempts INTEGER NOT NULL DEFAULT 0,        -- claims so far, lease-loss reclaims included
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
    idempotency_key TEXT
);

-- claim: oldest queued run of a queue.
CREATE INDEX runs_queued_by_queue ON runs (queue, available_at) WHERE status = 'queued';

-- claim (promote) and next_wake_at: earliest scheduled run of a queue.
CREATE INDEX runs_scheduled_by_queue ON runs (queue, available_at) WHERE status = 'scheduled';

-- claim (reap) and next_wake_at: earliest lease expiry of a queue.
CREATE INDEX runs_running_by_queue ON runs (queue, lease_expires_at) WHERE status = 'running';

-- cancel_many without a workflow: active runs by creation time.
CREATE INDEX runs_active_by_created
    ON runs (created_at) WHERE status IN ('scheduled', 'queued', 'running');

-- cancel_many with a workflow: active runs of a workflow by creation time.
CREATE INDEX runs_active_by_workflow
    ON runs (workflow, created_at) WHERE status IN ('scheduled', 'queued', 'running');

-- enqueue: (workflow, key) -> the run that holds the key until expires_at.
CREATE TABLE idempotency_keys (
    workflow TEXT NOT NULL,
    key TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    expires_at REAL NOT NULL,
    PRIMARY KEY (workflow, key)
) WITHOUT ROWID;

-- Deleting a run (retention) finds its keys without a scan.
CREATE INDEX idempotency_keys_by_run ON idempotency_keys (run_id);

PRAGMA user_version = 1;
