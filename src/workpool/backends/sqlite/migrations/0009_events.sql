-- Migration 0009: events into a run, values a run publishes, and 'event' steps.
--
-- SQLite cannot alter a CHECK constraint, so the steps table is rebuilt the documented
-- way (create, copy, drop, rename) to allow the kind 'event'. The migrator runs with
-- foreign keys off; nothing references steps.

CREATE TABLE steps_new (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('run', 'workflow', 'emit', 'sleep', 'event')),
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

INSERT INTO steps_new SELECT * FROM steps;

DROP TABLE steps;

ALTER TABLE steps_new RENAME TO steps;

-- The event keys a suspended run waits on (JSON array), written by each suspension; read
-- by send_event only while the run is suspended.
ALTER TABLE runs ADD COLUMN awaited_events TEXT;

-- Events sent to a run and not yet taken by one of its steps, in send order (id) per key.
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    payload TEXT NOT NULL  -- JSON
);

-- take_event: the oldest event of (run, key); the cascade of a run's delete.
CREATE INDEX events_by_key ON events (run_id, key);

-- The values a run published (set_event), the last one per key.
CREATE TABLE published (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,  -- JSON
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

PRAGMA user_version = 9;
