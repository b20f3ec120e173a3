-- Migration 0003: concurrency gates (at most max_concurrency runs of a workflow, or of
-- a workflow and concurrency key, admitted at once; see backends/base.py) and queue
-- settings (max_parallelism, paused), the registry of workflow definitions, named
-- leases (the cron leader) and rate limiters.
--
-- A gated run that is queued is either admitted (claimable) or waiting at its gate.
-- Ungated runs are always admitted. gates.admitted counts each gate's admitted runs
-- (queued and claimable, or running).

ALTER TABLE runs ADD COLUMN gate TEXT;               -- "<len(workflow)>:<workflow>:<key>"
ALTER TABLE runs ADD COLUMN gate_limit INTEGER;      -- the run's max_concurrency
ALTER TABLE runs ADD COLUMN admitted INTEGER NOT NULL DEFAULT 1 CHECK (admitted IN (0, 1));
ALTER TABLE runs ADD COLUMN rate_limits TEXT;        -- JSON [[limiter, count, per], ...]
ALTER TABLE runs ADD COLUMN rate_reserved INTEGER NOT NULL DEFAULT 0
    CHECK (rate_reserved IN (0, 1));                  -- holds a start time not yet used

-- claim: oldest claimable run of a queue (waiting gated runs are not in it).
DROP INDEX runs_queued_by_queue;
CREATE INDEX runs_queued_by_queue ON runs (queue, available_at)
    WHERE status = 'queued' AND admitted = 1;

-- gates: a gate's oldest waiting run.
CREATE INDEX runs_waiting_by_gate ON runs (gate, available_at)
    WHERE status = 'queued' AND admitted = 0;

CREATE TABLE gates (
    gate TEXT NOT NULL PRIMARY KEY,
    admitted INTEGER NOT NULL CHECK (admitted >= 0)
) WITHOUT ROWID;

-- Settings of the queues that have any; a queue without a row has no limit.
CREATE TABLE queues (
    name TEXT NOT NULL PRIMARY KEY,
    max_parallelism INTEGER CHECK (max_parallelism IS NULL OR max_parallelism >= 0),
    paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1))
) WITHOUT ROWID;

-- Workflow definitions as workers of each app registered them (sync_registry).
CREATE TABLE workflows (
    name TEXT NOT NULL PRIMARY KEY,
    app TEXT NOT NULL,
    queue TEXT NOT NULL,
    max_concurrency INTEGER,
    retry TEXT,                                 -- JSON retry policy, or NULL
    cron TEXT NOT NULL,                         -- JSON list of cron triggers
    updated_at REAL NOT NULL
) WITHOUT ROWID;

-- Named leases: one holder at a time until expires_at (acquire_lease).
CREATE TABLE leases (
    name TEXT NOT NULL PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;

-- Rate limiters: the theoretical arrival time of each (GCRA).
CREATE TABLE limiters (
    id TEXT NOT NULL PRIMARY KEY,
    tat REAL NOT NULL
) WITHOUT ROWID;

PRAGMA user_version = 3;
