-- Migration 0007: run priorities (see "Claim order" in backends/base.py).
--
-- A run's rank is available_at - rank_offset (the client computes the offset from the
-- priority and the queue's aging; the backend never reads priority). Claims and gates
-- take runs smallest rank first. The indexes order by that very expression, so a claim
-- and a gate admission stay one index seek, and no write has to keep a rank column in
-- step with available_at.

ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;  -- as enqueued, for reading
ALTER TABLE runs ADD COLUMN rank_offset REAL NOT NULL DEFAULT 0;  -- seconds

-- claim: each (queue, workflow)'s claimable runs, runs to isolate apart, by rank.
DROP INDEX runs_claimable;
CREATE INDEX runs_claimable ON runs (queue, workflow, isolate, available_at - rank_offset)
    WHERE status = 'queued' AND admitted = 1;

-- gates: a gate's waiting runs, by rank.
DROP INDEX runs_waiting_by_gate;
CREATE INDEX runs_waiting_by_gate ON runs (gate, available_at - rank_offset)
    WHERE status = 'queued' AND admitted = 0;

PRAGMA user_version = 7;
