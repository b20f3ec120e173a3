-- Migration 0010: batches and debounce (see "Batches" and "Debounce" in backends/base.py).
-- (0009 is the events feature's.)
--
-- A batch counts its runs by outcome; the terminal transition of its last run completes
-- it and enqueues its callback. A debounced run is found by (workflow, debounce key)
-- while it waits out its window. Runs without a batch or a debounce pay nothing here:
-- one NULL column, no entry in any index below (debounce lives in a table of its own:
-- columns and a partial index on runs cost every insert about 1.5 us, measured).

ALTER TABLE runs ADD COLUMN batch_id TEXT;  -- the batch it belongs to, if any

-- cancel_batch: a batch's unfinished runs without a cancel request, by id. Runs without a
-- batch have no entry, so no write of theirs touches it.
CREATE INDEX runs_of_batch ON runs (batch_id, id)
    WHERE batch_id IS NOT NULL AND status IN ('scheduled', 'queued', 'running', 'suspended')
        AND cancel_requested = 0;

-- enqueue of a debounced run: the run last enqueued with (workflow, key); a run's row
-- goes with it.
CREATE TABLE debounces (
    workflow TEXT NOT NULL,
    key TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    until REAL,  -- the latest its start may move to (first enqueue + debounce_max), or NULL
    PRIMARY KEY (workflow, key)
) WITHOUT ROWID;

-- Deleting a run (retention) finds its row without a scan.
CREATE INDEX debounces_by_run ON debounces (run_id);

CREATE TABLE batches (
    id TEXT NOT NULL PRIMARY KEY,
    created_at REAL NOT NULL,
    total INTEGER NOT NULL DEFAULT 0,      -- runs stored in it
    succeeded INTEGER NOT NULL DEFAULT 0,  -- its runs that ended so, so far
    failed INTEGER NOT NULL DEFAULT 0,
    canceled INTEGER NOT NULL DEFAULT 0,
    open INTEGER NOT NULL CHECK (open IN (0, 1)),  -- 1: runs may still be added
    callback TEXT,                         -- JSON of its callback hook, or NULL
    completed_at REAL,                     -- closed, every run ended: callback enqueued
    callback_run_id TEXT                   -- set when the callback is enqueued
) WITHOUT ROWID;

-- purge: completed batches by completion time.
CREATE INDEX batches_completed ON batches (completed_at) WHERE completed_at IS NOT NULL;

-- The first MAX_FAILED_IDS runs of a batch to end failed, in that order (from 1).
CREATE TABLE batch_failures (
    batch_id TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    PRIMARY KEY (batch_id, position)
) WITHOUT ROWID;

PRAGMA user_version = 10;
