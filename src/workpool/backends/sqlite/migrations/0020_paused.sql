-- Migration 0020: the 'paused' state (act_on_run: pause, resume, run now).
--
-- An operator pauses a queued or scheduled run: it leaves every queue index (never
-- claimed, promoted or admitted) until resumed or canceled; its deadline still counts, so
-- runs_deadlines includes it, and runs_of_batch too (a batch's paused run is unfinished).
-- SQLite cannot alter a CHECK constraint, so the runs table is rebuilt as 0017 did.

CREATE TABLE runs_new (
    id TEXT NOT NULL PRIMARY KEY,
    workflow TEXT NOT NULL,
    queue TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN (
        'scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused', 'succeeded',
        'failed', 'canceled'
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
, gate TEXT, gate_limit INTEGER, admitted INTEGER NOT NULL DEFAULT 1 CHECK (admitted IN (0, 1)), rate_limits TEXT, rate_reserved INTEGER NOT NULL DEFAULT 0
    CHECK (rate_reserved IN (0, 1)), retry_of TEXT, retried_as TEXT, isolate INTEGER NOT NULL DEFAULT 0, claims INTEGER NOT NULL DEFAULT 0, resuming INTEGER NOT NULL DEFAULT 0, run_time REAL NOT NULL DEFAULT 0, timeout REAL, attempt_time REAL NOT NULL DEFAULT 0, progress TEXT, priority INTEGER NOT NULL DEFAULT 0, rank_offset REAL NOT NULL DEFAULT 0, awaited_events TEXT, batch_id TEXT, trace_context TEXT, woken_by TEXT, canceled_by TEXT, deadline REAL, rerun_from TEXT);

INSERT INTO runs_new (
    id, workflow, queue, status, attempts, input, output, error, retry, hooks,
    created_at, available_at, started_at, finished_at, cancel_requested, cancel_reason,
    worker_id, lease_token, lease_expires_at, lease_losses, idempotency_key, wake_at,
    parent_run_id, parent_step, has_steps, gate, gate_limit, admitted, rate_limits,
    rate_reserved, retry_of, retried_as, isolate, claims, resuming, run_time, timeout,
    attempt_time, progress, priority, rank_offset, awaited_events, batch_id,
    trace_context, woken_by, canceled_by, deadline, rerun_from
)
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, hooks,
    created_at, available_at, started_at, finished_at, cancel_requested, cancel_reason,
    worker_id, lease_token, lease_expires_at, lease_losses, idempotency_key, wake_at,
    parent_run_id, parent_step, has_steps, gate, gate_limit, admitted, rate_limits,
    rate_reserved, retry_of, retried_as, isolate, claims, resuming, run_time, timeout,
    attempt_time, progress, priority, rank_offset, awaited_events, batch_id,
    trace_context, woken_by, canceled_by, deadline, rerun_from
FROM runs;

DROP TABLE runs;

ALTER TABLE runs_new RENAME TO runs;

CREATE INDEX runs_scheduled_by_queue ON runs (queue, available_at) WHERE status = 'scheduled';

CREATE INDEX runs_suspended_by_queue ON runs (queue, wake_at)
    WHERE status = 'suspended' AND wake_at IS NOT NULL;

CREATE INDEX runs_running_by_queue ON runs (queue, lease_expires_at) WHERE status = 'running';

CREATE INDEX runs_by_parent ON runs (parent_run_id, created_at)
    WHERE parent_run_id IS NOT NULL;

CREATE INDEX runs_listed ON runs (queue, workflow, status, id);

CREATE INDEX runs_finished ON runs (finished_at)
    WHERE status IN ('succeeded', 'failed', 'canceled');

CREATE TRIGGER runs_remember_pair AFTER INSERT ON runs
BEGIN
    INSERT OR IGNORE INTO run_pairs (queue, workflow) VALUES (new.queue, new.workflow);
END;

CREATE INDEX runs_claimable ON runs (queue, workflow, isolate, available_at - rank_offset)
    WHERE status = 'queued' AND admitted = 1;

CREATE INDEX runs_waiting_by_gate ON runs (gate, available_at - rank_offset)
    WHERE status = 'queued' AND admitted = 0;

CREATE INDEX runs_deadlines ON runs (queue, deadline)
    WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended', 'paused');

CREATE INDEX runs_of_batch ON runs (batch_id, id)
    WHERE batch_id IS NOT NULL
        AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused')
        AND cancel_requested = 0;

PRAGMA user_version = 20;
