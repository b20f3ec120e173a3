-- Migration 0005: claims by workflow, runs to isolate, fencing tokens, live workers
-- (see Backend.claim and Backend.heartbeat in backends/base.py).

ALTER TABLE runs ADD COLUMN isolate INTEGER NOT NULL DEFAULT 0;  -- 1: lost its lease, runs alone
ALTER TABLE runs ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;   -- claims so far: the fence
ALTER TABLE runs ADD COLUMN resuming INTEGER NOT NULL DEFAULT 0; -- 1: next claim resumes
ALTER TABLE runs ADD COLUMN run_time REAL NOT NULL DEFAULT 0;    -- seconds, all executions

-- claim: each (queue, workflow)'s claimable runs, runs to isolate apart, oldest first. A
-- worker seeks the pairs of the workflows it defines only, so runs no worker defines
-- are never read, and a pair's depth does not change the cost of a claim.
DROP INDEX runs_queued_by_queue;
CREATE INDEX runs_claimable ON runs (queue, workflow, isolate, available_at)
    WHERE status = 'queued' AND admitted = 1;

-- Live workers: what each serves, until when (heartbeat, list_workers).
CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    app TEXT NOT NULL,
    queues TEXT NOT NULL,      -- JSON array
    workflows TEXT NOT NULL,   -- JSON array
    started_at REAL NOT NULL,
    seen_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;

PRAGMA user_version = 5;
