-- Named queries of the SQLite backend, loaded once by sql.load_queries().
--
-- Each block starts with "-- name: <name>", then one comment line saying what it does,
-- then one statement with :named parameters. Times (:now, :expires_at ...) are REAL
-- seconds since the epoch; lists arrive as JSON arrays read with json_each.

-- name: find_idempotency_key
-- The run holding (:workflow, :key), if the key has not expired at :now.
SELECT run_id FROM idempotency_keys
WHERE workflow = :workflow AND key = :key AND expires_at > :now;

-- name: remember_idempotency_key
-- Map (:workflow, :key) to :run_id until :expires_at, replacing an expired mapping.
INSERT INTO idempotency_keys (workflow, key, run_id, expires_at)
VALUES (:workflow, :key, :run_id, :expires_at)
ON CONFLICT (workflow, key) DO UPDATE SET run_id = excluded.run_id, expires_at = excluded.expires_at;

-- name: insert_run
-- Store a new run in :status; changes nothing (rowcount 0) if :id already exists.
INSERT INTO runs (
    id, workflow, queue, status, input, retry, hooks, created_at, available_at, idempotency_key
) VALUES (
    :id, :workflow, :queue, :status, :input, :retry, :hooks, :now, :available_at, :idempotency_key
)
ON CONFLICT (id) DO NOTHING;

-- name: promote_due
-- Make up to :batch scheduled runs of :queue due at :now queued, oldest first.
UPDATE runs SET status = 'queued'
WHERE id IN (
    SELECT id FROM runs
    WHERE status = 'scheduled' AND queue = :queue AND available_at <= :now
    ORDER BY available_at
    LIMIT :batch
);

-- name: expired_leases
-- Up to :batch running runs of :queue whose lease expired at :now, earliest expiry first.
SELECT id, cancel_requested, lease_losses FROM runs
WHERE status = 'running' AND queue = :queue AND lease_expires_at <= :now
ORDER BY lease_expires_at
LIMIT :batch;

-- name: claim_queued
-- Lease up to :limit queued runs of :queue, oldest available_at first, until :expires_at.
UPDATE runs SET
    status = 'running',
    attempts = attempts + 1,
    started_at = :now,
    worker_id = :worker_id,
    lease_token = lower(hex(randomblob(16))),
    lease_expires_at = :expires_at
WHERE id IN (
    SELECT id FROM runs
    WHERE status = 'queued' AND queue = :queue
    ORDER BY available_at
    LIMIT :limit
)
RETURNING rowid, id, lease_token, workflow, queue, input, attempts, retry, created_at, available_at;

-- name: next_wake_at
-- Earliest scheduled available_at or lease expiry over the :queues JSON array, or NULL.
SELECT min(wake_at) AS wake_at FROM (
    SELECT (
        SELECT available_at FROM runs
        WHERE status = 'scheduled' AND queue = wanted.value
        ORDER BY available_at LIMIT 1
    ) AS wake_at
    FROM json_each(:queues) AS wanted
    UNION ALL
    SELECT (
        SELECT lease_expires_at FROM runs
        WHERE status = 'running' AND queue = wanted.value
        ORDER BY lease_expires_at LIMIT 1
    ) AS wake_at
    FROM json_each(:queues) AS wanted
);

-- name: renew_leases
-- Extend to :expires_at each held lease of the :leases JSON array of [run id, token].
UPDATE runs SET lease_expires_at = :expires_at
FROM (
    SELECT json_extract(value, '$[0]') AS run_id, json_extract(value, '$[1]') AS token
    FROM json_each(:leases)
) AS lease
WHERE runs.id = lease.run_id AND runs.lease_token = lease.token AND runs.status = 'running'
RETURNING runs.id, runs.lease_token, runs.cancel_requested;

-- name: held_lease
-- The run :id if it is running under lease :token (no row: the lease is not held).
SELECT cancel_requested FROM runs
WHERE id = :id AND status = 'running' AND lease_token = :token;

-- name: end_run
-- Move run :id to terminal :status at :now, store :output/:error/:cancel_reason if given.
UPDATE runs SET
    status = :status,
    finished_at = :now,
    output = coalesce(:output, output),
    error = coalesce(:error, error),
    cancel_requested = max(cancel_requested, :cancel_requested),
    cancel_reason = coalesce(:cancel_reason, cancel_reason),
    lease_token = NULL,
    lease_expires_at = NULL,
    lease_losses = lease_losses + :lease_loss
WHERE id = :id
RETURNING id, workflow, status, output, error, cancel_reason, hooks;

-- name: retry_run
-- Drop run :id's lease, store :error; scheduled at :retry_at, or queued if due at :now.
UPDATE runs SET
    status = CASE WHEN :retry_at <= :now THEN 'queued' ELSE 'scheduled' END,
    available_at = :retry_at,
    error = :error,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = :id;

-- name: requeue_run
-- Drop run :id's lease and queue it again at :now, adding :lease_loss to lease_losses.
UPDATE runs SET
    status = 'queued',
    available_at = :now,
    lease_token = NULL,
    lease_expires_at = NULL,
    lease_losses = lease_losses + :lease_loss
WHERE id = :id;

-- name: run_status
-- Status and cancel flag of run :id (no row: unknown id).
SELECT status, cancel_requested FROM runs WHERE id = :id;

-- name: request_cancel
-- Flag running run :id for cancellation; the first :reason given is kept.
UPDATE runs SET
    cancel_reason = CASE WHEN cancel_requested THEN cancel_reason ELSE :reason END,
    cancel_requested = 1
WHERE id = :id;

-- name: cancelable_runs
-- Up to :limit active runs created before :before, not already cancel-requested, oldest first.
SELECT id, status FROM runs
WHERE status IN ('scheduled', 'queued', 'running')
    AND created_at < :before
    AND NOT (status = 'running' AND cancel_requested = 1)
ORDER BY created_at
LIMIT :limit;

-- name: cancelable_runs_of_workflow
-- Like cancelable_runs, restricted to runs of :workflow.
SELECT id, status FROM runs
WHERE status IN ('scheduled', 'queued', 'running')
    AND workflow = :workflow
    AND created_at < :before
    AND NOT (status = 'running' AND cancel_requested = 1)
ORDER BY created_at
LIMIT :limit;

-- name: get_run
-- Every column of run :id that a RunRecord holds.
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, lease_losses,
    idempotency_key
FROM runs WHERE id = :id;
