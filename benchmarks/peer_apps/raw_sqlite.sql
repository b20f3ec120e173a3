-- The floor on SQLite (benchmarks/peer_apps/raw_sqlite.py): one job table.
-- Blocks are named by a "-- name: <name>" line; parameters are positional (?).

-- name: schema
-- The table and the partial index of queued jobs that a claim reads (O(log n)).
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    payload TEXT NOT NULL,                  -- JSON: {"id", "task", "x"}
    status TEXT NOT NULL DEFAULT 'queued'   -- queued, running, done
);
CREATE INDEX IF NOT EXISTS jobs_queued ON jobs (id) WHERE status = 'queued';

-- name: enqueue
-- Parameters: the job's JSON. One transaction per job.
INSERT INTO jobs (payload) VALUES (?);

-- name: claim
-- Parameters: how many jobs at most. Returns (id, payload) of the jobs claimed.
UPDATE jobs SET status = 'running'
WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' ORDER BY id LIMIT ?)
RETURNING id, payload;

-- name: done
-- Parameters: a job's id (executemany: one transaction for a claimed batch).
UPDATE jobs SET status = 'done' WHERE id = ?;
