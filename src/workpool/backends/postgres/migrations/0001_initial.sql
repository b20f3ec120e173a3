-- Migration 0001: every table of the PostgreSQL backend (the design of the SQLite
-- backend's migrations 0001-0012, in PostgreSQL's types; see backends/base.py).
--
-- Runs in the pool's schema (search_path), inside the migrator's transaction. Times are
-- double precision seconds since the epoch, from the caller's clock; JSON columns are
-- text, returned byte for byte as stored.

CREATE TABLE runs (
    id text PRIMARY KEY,
    workflow text NOT NULL,
    queue text NOT NULL,
    status text NOT NULL CHECK (status IN (
        'scheduled', 'queued', 'running', 'suspended', 'succeeded', 'failed', 'canceled'
    )),
    attempts integer NOT NULL DEFAULT 0,
    input text NOT NULL,
    output text,
    error text,
    retry text,
    hooks text NOT NULL DEFAULT '[]',
    created_at double precision NOT NULL,
    available_at double precision NOT NULL,
    started_at double precision,
    finished_at double precision,
    cancel_requested boolean NOT NULL DEFAULT false,
    cancel_reason text,
    worker_id text,
    lease_token text,
    lease_expires_at double precision,
    lease_losses integer NOT NULL DEFAULT 0,
    idempotency_key text,
    wake_at double precision,                   -- suspended with a timer: when it is due
    parent_run_id text,                         -- the run whose step started this one
    parent_step text,                           -- the parent's step awaiting this run
    has_steps boolean NOT NULL DEFAULT false,
    gate text,                                  -- "<len(workflow)>:<workflow>:<key>"
    gate_limit integer,                         -- the run's max_concurrency
    admitted boolean NOT NULL DEFAULT true,     -- queued: claimable (not waiting at its gate)
    rate_limits text,                           -- JSON [[limiter, count, per], ...]
    rate_reserved boolean NOT NULL DEFAULT false,
    retry_of text,
    retried_as text,
    isolate boolean NOT NULL DEFAULT false,     -- lost its lease: runs alone next
    claims integer NOT NULL DEFAULT 0,          -- the fence
    resuming boolean NOT NULL DEFAULT false,    -- the next claim resumes the attempt
    run_time double precision NOT NULL DEFAULT 0,
    timeout double precision,
    attempt_time double precision NOT NULL DEFAULT 0,
    progress text,
    priority integer NOT NULL DEFAULT 0,
    rank_offset double precision NOT NULL DEFAULT 0,
    awaited_events text,                        -- JSON array of the keys a suspension awaits
    batch_id text
);

-- claim: each (queue, workflow)'s claimable runs by rank, runs to isolate apart. Partial:
-- only queued admitted runs have an entry, so the index a claim walks holds the ready
-- runs and nothing else, whatever the backlog of scheduled, waiting or finished runs.
CREATE INDEX runs_claimable ON runs (queue, workflow, isolate, (available_at - rank_offset))
    WHERE status = 'queued' AND admitted;

-- gates: a gate's waiting runs, by rank.
CREATE INDEX runs_waiting_by_gate ON runs (gate, (available_at - rank_offset))
    WHERE status = 'queued' AND NOT admitted;

-- claim (promote) and next_wake_at.
CREATE INDEX runs_scheduled_by_queue ON runs (queue, available_at) WHERE status = 'scheduled';
CREATE INDEX runs_suspended_by_queue ON runs (queue, wake_at)
    WHERE status = 'suspended' AND wake_at IS NOT NULL;

-- claim (reap) and next_wake_at; the queue limit's running count.
CREATE INDEX runs_running_by_queue ON runs (queue, lease_expires_at) WHERE status = 'running';

-- list_runs, get_stats and cancel_many: each (queue, workflow, status) in id order.
CREATE INDEX runs_listed ON runs (queue, workflow, status, id);

-- purge: terminal runs, oldest finished first.
CREATE INDEX runs_finished ON runs (finished_at)
    WHERE status IN ('succeeded', 'failed', 'canceled');

-- get_children, and the cascade of a cancel to the children a run awaits.
CREATE INDEX runs_by_parent ON runs (parent_run_id, created_at) WHERE parent_run_id IS NOT NULL;

-- cancel_batch: a batch's unfinished runs without a cancel request, by id.
CREATE INDEX runs_of_batch ON runs (batch_id, id)
    WHERE batch_id IS NOT NULL AND status IN ('scheduled', 'queued', 'running', 'suspended')
        AND NOT cancel_requested;

-- (workflow, key) -> the run holding the key until expires_at. The reference is checked
-- at commit: an enqueue takes the key before it stores the run, so that two enqueues of
-- one key queue behind the key's index entry instead of both storing a run.
CREATE TABLE idempotency_keys (
    workflow text NOT NULL,
    key text NOT NULL,
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    expires_at double precision NOT NULL,
    PRIMARY KEY (workflow, key)
);
CREATE INDEX idempotency_keys_by_run ON idempotency_keys (run_id);

CREATE TABLE steps (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('run', 'workflow', 'emit', 'sleep', 'event')),
    status text NOT NULL CHECK (status IN ('waiting', 'succeeded', 'failed', 'canceled')),
    attempts integer NOT NULL,
    output text,
    error text,
    child_run_id text,
    wake_at double precision,
    started_at double precision NOT NULL,
    finished_at double precision,
    PRIMARY KEY (run_id, name)
);

-- Each gate's admitted runs (queued and claimable, or running). A change at a gate locks
-- its row, so admissions at one gate are serialized and those of others are not.
CREATE TABLE gates (
    gate text PRIMARY KEY,
    admitted integer NOT NULL CHECK (admitted >= 0)
);

CREATE TABLE queues (
    name text PRIMARY KEY,
    max_parallelism integer CHECK (max_parallelism IS NULL OR max_parallelism >= 0),
    paused boolean NOT NULL DEFAULT false
);

CREATE TABLE workflows (
    name text PRIMARY KEY,
    app text NOT NULL,
    queue text NOT NULL,
    max_concurrency integer,
    retry text,
    cron text NOT NULL,
    rate_limits text,
    updated_at double precision NOT NULL
);

CREATE TABLE leases (
    name text PRIMARY KEY,
    holder text NOT NULL,
    expires_at double precision NOT NULL
);

-- Rate limiters: the theoretical arrival time of each (GCRA).
CREATE TABLE limiters (
    id text PRIMARY KEY,
    tat double precision NOT NULL
);

-- Every (queue, workflow) that has had a run: what list_runs and get_stats walk.
CREATE TABLE run_pairs (
    queue text NOT NULL,
    workflow text NOT NULL,
    PRIMARY KEY (queue, workflow)
);

CREATE TABLE counters (
    minute bigint NOT NULL,
    queue text NOT NULL,
    workflow text NOT NULL,
    executions bigint NOT NULL DEFAULT 0,
    timed bigint NOT NULL DEFAULT 0,
    run_time double precision NOT NULL DEFAULT 0,
    succeeded bigint NOT NULL DEFAULT 0,
    failed bigint NOT NULL DEFAULT 0,
    canceled bigint NOT NULL DEFAULT 0,
    retried bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, workflow)
);

CREATE TABLE workers (
    id text PRIMARY KEY,
    app text NOT NULL,
    queues text NOT NULL,
    workflows text NOT NULL,
    started_at double precision NOT NULL,
    seen_at double precision NOT NULL,
    expires_at double precision NOT NULL
);

CREATE TABLE events (
    id bigserial PRIMARY KEY,
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key text NOT NULL,
    payload text NOT NULL
);
CREATE INDEX events_by_key ON events (run_id, key, id);

CREATE TABLE published (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (run_id, key)
);

CREATE TABLE event_ids (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    event_id text NOT NULL,
    PRIMARY KEY (run_id, event_id)
);

CREATE TABLE debounces (
    workflow text NOT NULL,
    key text NOT NULL,
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    until double precision,
    PRIMARY KEY (workflow, key)
);
CREATE INDEX debounces_by_run ON debounces (run_id);

CREATE TABLE batches (
    id text PRIMARY KEY,
    created_at double precision NOT NULL,
    total integer NOT NULL DEFAULT 0,
    succeeded integer NOT NULL DEFAULT 0,
    failed integer NOT NULL DEFAULT 0,
    canceled integer NOT NULL DEFAULT 0,
    open boolean NOT NULL,
    callback text,
    completed_at double precision,
    callback_run_id text
);
CREATE INDEX batches_completed ON batches (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE batch_failures (
    batch_id text NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    position integer NOT NULL,
    run_id text NOT NULL,
    PRIMARY KEY (batch_id, position)
);

-- A trigger, so no path that stores a run (enqueue, children, hooks, re-runs) can forget
-- its pair.
CREATE FUNCTION remember_run_pair() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_pairs (queue, workflow) VALUES (NEW.queue, NEW.workflow)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_remember_pair AFTER INSERT ON runs
FOR EACH ROW EXECUTE FUNCTION remember_run_pair();
