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
    id, workflow, queue, status, input, retry, hooks, created_at, available_at, idempotency_key,
    parent_run_id, parent_step, gate, gate_limit, admitted, rate_limits, timeout, priority,
    rank_offset, trace_context, deadline, gate_list
) VALUES (
    :id, :workflow, :queue, :status, :input, :retry, :hooks, :now, :available_at, :idempotency_key,
    :parent_run_id, :parent_step, :gate, :gate_limit, :gate IS NULL, :rate_limits, :timeout,
    :priority, :rank_offset, :trace_context, :deadline, :gate_list
)
ON CONFLICT (id) DO NOTHING;

-- name: promote_due
-- Make up to :batch scheduled runs of :queue due at :now queued, oldest first.
UPDATE runs SET status = 'queued', admitted = gate IS NULL
WHERE id IN (
    SELECT id FROM runs
    WHERE status = 'scheduled' AND queue = :queue AND available_at <= :now
    ORDER BY available_at
    LIMIT :batch
)
RETURNING id, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: promote_timers
-- Queue up to :batch suspended runs of :queue whose timer is due at :now, earliest first.
UPDATE runs SET status = 'queued', available_at = wake_at, wake_at = NULL, admitted = gate IS NULL
WHERE id IN (
    SELECT id FROM runs
    WHERE status = 'suspended' AND queue = :queue AND wake_at IS NOT NULL AND wake_at <= :now
    ORDER BY wake_at
    LIMIT :batch
)
RETURNING id, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: expired_leases
-- Up to :batch running runs of :queue whose lease expired at :now, earliest expiry first;
-- sound: whether the row is sound_run (1; else 0).
SELECT id, workflow, cancel_requested, lease_losses, coalesce({sound_run}, 0) AS sound
FROM runs
WHERE status = 'running' AND queue = :queue AND lease_expires_at <= :now
ORDER BY lease_expires_at
LIMIT :batch;

-- name: claimable_in_pair
-- Up to :limit claimable runs of (:queue, :workflow) with isolate = :isolate, by rank.
SELECT id, available_at - rank_offset AS rank FROM runs
WHERE status = 'queued' AND admitted = 1 AND queue = :queue AND workflow = :workflow
    AND isolate = :isolate
ORDER BY available_at - rank_offset
LIMIT :limit;

-- name: oldest_isolated
-- The earliest available_at of the first claimable run to isolate (by rank) of each of
-- the :workflows array in :queue.
SELECT min(first) AS since FROM (
    SELECT (
        SELECT available_at FROM runs
        WHERE status = 'queued' AND admitted = 1 AND queue = :queue
            AND workflow = served.value AND isolate = 1
        ORDER BY available_at - rank_offset LIMIT 1
    ) AS first
    FROM json_each(:workflows) AS served
);

-- name: queue_workflows
-- The workflows that have had runs in :queue.
SELECT workflow FROM run_pairs WHERE queue = :queue;

-- fragment: sound_run
-- True when a runs row holds values of the types and ranges that records.run_problem
-- trusts (false or NULL: corrupt; the claim then reads it with runs_to_check to say why).
-- Written as claims and finishes read it, so a sound row costs no second read.
typeof(id) = 'text' AND typeof(workflow) = 'text' AND typeof(queue) = 'text'
AND typeof(input) = 'text'
AND status IN (
    'scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused', 'succeeded', 'failed',
    'canceled'
)
AND typeof(attempts) = 'integer' AND attempts BETWEEN -9007199254740991 AND 9007199254740991
AND typeof(lease_losses) = 'integer'
AND lease_losses BETWEEN -9007199254740991 AND 9007199254740991
AND typeof(claims) = 'integer' AND claims BETWEEN -9007199254740991 AND 9007199254740991
AND typeof(priority) = 'integer' AND priority BETWEEN -9007199254740991 AND 9007199254740991
AND cancel_requested IN (0, 1) AND has_steps IN (0, 1) AND resuming IN (0, 1)
AND typeof(created_at) IN ('integer', 'real')
AND created_at BETWEEN -62135596800 AND 253402300799
AND typeof(available_at) IN ('integer', 'real')
AND available_at BETWEEN -62135596800 AND 253402300799
AND (started_at IS NULL OR typeof(started_at) IN ('integer', 'real')
    AND started_at BETWEEN -62135596800 AND 253402300799)
AND (finished_at IS NULL OR typeof(finished_at) IN ('integer', 'real')
    AND finished_at BETWEEN -62135596800 AND 253402300799)
AND typeof(run_time) IN ('integer', 'real')
AND run_time BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308
AND typeof(rank_offset) IN ('integer', 'real')
AND rank_offset BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308
AND typeof(attempt_time) IN ('integer', 'real')
AND attempt_time BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308
AND (timeout IS NULL OR typeof(timeout) IN ('integer', 'real')
    AND timeout BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308)
AND (deadline IS NULL OR typeof(deadline) IN ('integer', 'real')
    AND deadline BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308)
AND (gate_limit IS NULL OR typeof(gate_limit) = 'integer'
    AND gate_limit BETWEEN -9007199254740991 AND 9007199254740991)
AND (gate IS NULL OR gate_limit IS NOT NULL)
AND (gate_list IS NULL OR typeof(gate_list) = 'text' AND json_valid(gate_list))
AND typeof(coalesce(output, '')) = 'text' AND typeof(coalesce(error, '')) = 'text'
AND typeof(coalesce(retry, '')) = 'text' AND typeof(coalesce(cancel_reason, '')) = 'text'
AND typeof(coalesce(idempotency_key, '')) = 'text'
AND typeof(coalesce(parent_run_id, '')) = 'text' AND typeof(coalesce(retry_of, '')) = 'text'
AND typeof(coalesce(retried_as, '')) = 'text' AND typeof(coalesce(progress, '')) = 'text'
AND typeof(coalesce(batch_id, '')) = 'text' AND typeof(coalesce(trace_context, '')) = 'text'
AND typeof(coalesce(woken_by, '')) = 'text'

-- name: runs_to_check
-- The columns of the runs of the :ids JSON array that records.run_problem checks (get_run's,
-- and those only claims read): read to say why a row is not sound_run.
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, lease_losses,
    idempotency_key, parent_run_id, retry_of, retried_as, claims, run_time, gate_limit, priority,
    timeout, progress, batch_id, deadline, rerun_from,
    status = 'queued' AND gate IS NOT NULL AND admitted = 0 AS waiting_at_gate,
    status = 'scheduled' AND rate_reserved = 1 AS rate_reserved,
    rank_offset, attempt_time, has_steps, resuming, gate, admitted, trace_context, woken_by,
    gate_list
FROM runs WHERE id IN (SELECT value FROM json_each(:ids));

-- name: set_aside
-- Set run :id aside, its record corrupt, as it is: isolate = 2 takes it out of every
-- claim (claims take isolate 0 or 1), no lease expiry out of reaping, and it no longer
-- counts as running in its queue (running_in_queue).
UPDATE runs SET isolate = 2, lease_expires_at = NULL WHERE id = :id;

-- name: claim_queued
-- Lease the runs of the :ids JSON array to :worker_id until :expires_at, those whose row is
-- sound_run (the claim sets the others aside).
UPDATE runs SET
    status = 'running',
    attempts = attempts + 1 - resuming,
    attempt_time = attempt_time * resuming,
    resuming = 0,
    claims = claims + 1,
    started_at = :now,
    worker_id = :worker_id,
    lease_token = lower(hex(randomblob(16))),
    lease_expires_at = :expires_at
WHERE id IN (SELECT value FROM json_each(:ids)) AND {sound_run}
RETURNING
    rowid, id, lease_token, workflow, queue, input, attempts, retry, created_at, available_at,
    has_steps, claims, isolate, timeout, attempt_time, batch_id, trace_context, woken_by, deadline;

-- name: next_wake_at
-- Earliest scheduled available_at, timer, lease expiry or deadline of a waiting run over
-- the :queues JSON array, or NULL.
SELECT min(wake_at) AS wake_at FROM (
    SELECT (
        SELECT available_at FROM runs
        WHERE status = 'scheduled' AND queue = wanted.value
        ORDER BY available_at LIMIT 1
    ) AS wake_at
    FROM json_each(:queues) AS wanted
    UNION ALL
    SELECT (
        SELECT wake_at FROM runs
        WHERE status = 'suspended' AND queue = wanted.value AND wake_at IS NOT NULL
        ORDER BY wake_at LIMIT 1
    ) AS wake_at
    FROM json_each(:queues) AS wanted
    UNION ALL
    SELECT (
        SELECT lease_expires_at FROM runs
        WHERE status = 'running' AND queue = wanted.value
        ORDER BY lease_expires_at LIMIT 1
    ) AS wake_at
    FROM json_each(:queues) AS wanted
    UNION ALL
    SELECT (
        SELECT deadline FROM runs
        WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended', 'paused')
            AND queue = wanted.value
        ORDER BY deadline LIMIT 1
    ) AS wake_at
    FROM json_each(:queues) AS wanted
);

-- name: past_deadline
-- Up to :batch waiting runs of :queue (not running) whose deadline is at or before :now,
-- earliest first, with their status (runs_deadlines).
SELECT id, status FROM runs
WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended', 'paused')
    AND queue = :queue AND deadline <= :now AND isolate < 2
ORDER BY deadline
LIMIT :batch;

-- name: renew_leases
-- Extend to :expires_at each held lease of the :leases JSON array of [run id, token,
-- progress JSON text or null] (null keeps the stored progress); a run set aside as
-- corrupt holds none. canceled_by is NULL unless a cancel was requested.
UPDATE runs SET lease_expires_at = :expires_at, progress = coalesce(lease.reported, runs.progress)
FROM (
    SELECT
        json_extract(value, '$[0]') AS run_id,
        json_extract(value, '$[1]') AS token,
        json_extract(value, '$[2]') AS reported
    FROM json_each(:leases)
) AS lease
WHERE runs.id = lease.run_id AND runs.lease_token = lease.token AND runs.status = 'running'
    AND runs.isolate < 2
RETURNING runs.id, runs.lease_token, runs.cancel_requested, runs.canceled_by;

-- name: held_lease
-- The run :id if it is running under lease :token (no row: the lease is not held, as for
-- a run set aside as corrupt, or whose row is not sound_run: the claim that reaps it sets
-- it aside).
SELECT cancel_requested, queue, workflow, started_at, gate FROM runs
WHERE id = :id AND status = 'running' AND lease_token = :token AND isolate < 2
    AND {sound_run};

-- name: end_run
-- Move unfinished run :id to terminal :status at :now, store :output/:error/:cancel_reason.
UPDATE runs SET
    status = :status,
    finished_at = :now,
    output = coalesce(:output, output),
    error = coalesce(:error, error),
    cancel_requested = max(cancel_requested, :cancel_requested),
    cancel_reason = coalesce(:cancel_reason, cancel_reason),
    lease_token = NULL,
    lease_expires_at = NULL,
    wake_at = NULL,
    lease_losses = lease_losses + :lease_loss,
    run_time = run_time + :ran
WHERE id = :id AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused')
RETURNING
    id, workflow, queue, status, output, error, cancel_reason, hooks, parent_run_id, parent_step,
    batch_id, rerun_from;

-- name: retry_run
-- Drop run :id's lease, store :error; scheduled at :retry_at, or queued if due at :now.
UPDATE runs SET
    status = CASE WHEN :retry_at <= :now THEN 'queued' ELSE 'scheduled' END,
    admitted = gate IS NULL,
    isolate = 0,
    available_at = :retry_at,
    error = :error,
    run_time = run_time + :ran,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = :id
RETURNING id, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: requeue_run
-- Drop run :id's lease and queue it again at :now, adding :lease_loss to lease_losses
-- (a lost lease also marks it to run alone); :resume = 1: the next claim takes the
-- same attempt again (the run was handed back: a hand-back is not an attempt).
UPDATE runs SET
    status = 'queued',
    resuming = MAX(resuming, :resume),
    available_at = :now,
    admitted = gate IS NULL,
    isolate = CASE WHEN :lease_loss > 0 THEN 1 ELSE isolate END,
    lease_token = NULL,
    lease_expires_at = NULL,
    lease_losses = lease_losses + :lease_loss
WHERE id = :id
RETURNING id, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: suspend_run
-- Drop run :id's lease, the attempt to resume: suspended until :wake_at, a child or an
-- event of the :events JSON array (NULL: none).
UPDATE runs SET
    status = 'suspended',
    resuming = 1,
    run_time = run_time + :ran,
    attempt_time = attempt_time + :ran,
    isolate = 0,
    wake_at = :wake_at,
    awaited_events = :events,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = :id;

-- name: stop_run
-- Drop run :id's lease, the attempt to resume: needs_attention, with :error saying why,
-- until an operator reruns it from a step (rerun_from_step) or cancels it.
UPDATE runs SET
    status = 'needs_attention',
    resuming = 1,
    error = :error,
    run_time = run_time + :ran,
    attempt_time = attempt_time + :ran,
    isolate = 0,
    wake_at = NULL,
    awaited_events = NULL,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = :id;

-- name: forget_steps_from
-- Delete step :name of run :run_id and every later one: a larger or equal position, or,
-- where either has none, a later or equal start.
DELETE FROM steps
WHERE run_id = :run_id AND (
    CASE WHEN position IS NULL OR :position IS NULL THEN started_at >= :started_at
        ELSE position >= :position END
);

-- name: rerun_stopped
-- Queue run :id (needs_attention, failed or canceled) at :now, recording :rerun_from
-- (JSON) as why; a finished run (:fresh) leaves the finished runs with a fresh attempt.
UPDATE runs SET
    status = 'queued', available_at = :now, admitted = gate IS NULL, rerun_from = :rerun_from,
    attempts = CASE WHEN :fresh THEN 0 ELSE attempts END,
    resuming = CASE WHEN :fresh THEN 0 ELSE resuming END,
    attempt_time = CASE WHEN :fresh THEN 0 ELSE attempt_time END,
    error = CASE WHEN :fresh THEN NULL ELSE error END,
    finished_at = NULL, output = NULL, cancel_reason = NULL, cancel_requested = 0
WHERE id = :id AND status IN ('needs_attention', 'failed', 'canceled')
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: resume_now
-- Drop run :id's lease, the attempt to resume, queued again at :now.
UPDATE runs SET
    status = 'queued',
    resuming = 1,
    run_time = run_time + :ran,
    attempt_time = attempt_time + :ran,
    isolate = 0,
    available_at = :now,
    admitted = gate IS NULL,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = :id
RETURNING id, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: unfinished_among
-- How many of the run ids in the :ids JSON array exist and have not ended.
SELECT count(*) AS unfinished FROM runs
WHERE id IN (SELECT value FROM json_each(:ids))
    AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused');

-- name: record_child_outcome
-- Store child :child's outcome in step :step of run :parent, if the step still awaits it.
UPDATE steps SET status = :status, output = :output, error = :error, finished_at = :now
WHERE run_id = :parent AND name = :step AND child_run_id = :child;

-- name: pause_run
-- Pause run :id if it is queued or scheduled: in no queue index, no reservation held.
UPDATE runs SET status = 'paused', admitted = 0, rate_reserved = 0
WHERE id = :id AND status IN ('queued', 'scheduled');

-- name: resume_run
-- Queue paused run :id at its available_at (scheduled if that is after :now).
UPDATE runs SET
    status = CASE WHEN available_at <= :now THEN 'queued' ELSE 'scheduled' END,
    admitted = gate IS NULL
WHERE id = :id AND status = 'paused'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: run_now
-- Queue scheduled run :id at :now.
UPDATE runs SET status = 'queued', available_at = :now, admitted = gate IS NULL
WHERE id = :id AND status = 'scheduled'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: wake_suspended
-- Queue run :id at :now if it is suspended; returns its queue when it was.
UPDATE runs SET status = 'queued', available_at = :now, wake_at = NULL, admitted = gate IS NULL
WHERE id = :id AND status = 'suspended'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: awaited_children
-- Unfinished children of run :id that one of its steps awaits.
SELECT id, status FROM runs
WHERE parent_run_id = :id AND parent_step IS NOT NULL
    AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused');

-- name: child_outcome
-- Status and outcome fields of run :id (no row: unknown id).
SELECT id, status, output, error, cancel_reason FROM runs WHERE id = :id;

-- name: save_step
-- Store step :name of run :run_id, replacing an earlier one of that name.
INSERT INTO steps (
    run_id, name, kind, status, attempts, output, error, child_run_id, wake_at, started_at,
    finished_at, position, args_hash
) VALUES (
    :run_id, :name, :kind, :status, :attempts, :output, :error, :child_run_id, :wake_at,
    :started_at, :finished_at, :position, :args_hash
)
ON CONFLICT (run_id, name) DO UPDATE SET
    kind = excluded.kind,
    status = excluded.status,
    attempts = excluded.attempts,
    output = excluded.output,
    error = excluded.error,
    child_run_id = excluded.child_run_id,
    wake_at = excluded.wake_at,
    started_at = excluded.started_at,
    finished_at = excluded.finished_at,
    position = excluded.position,
    args_hash = excluded.args_hash;

-- name: get_step
-- Step :name of run :run_id (no row: none saved).
SELECT run_id, name, kind, status, attempts, output, error, child_run_id, wake_at, started_at,
    finished_at, position, args_hash
FROM steps WHERE run_id = :run_id AND name = :name;

-- name: mark_has_steps
-- Note that run :id has saved steps (claims then say so).
UPDATE runs SET has_steps = 1 WHERE id = :id AND has_steps = 0;

-- name: get_steps
-- Every step of run :run_id, oldest first (sorts that run's steps only).
SELECT run_id, name, kind, status, attempts, output, error, child_run_id, wake_at, started_at,
    finished_at, position, args_hash
FROM steps WHERE run_id = :run_id
ORDER BY started_at, name;

-- name: get_children
-- Ids of the runs started by run :id's steps, oldest first.
SELECT id FROM runs WHERE parent_run_id = :id ORDER BY created_at;

-- name: rerun_check
-- What rerun_from_step checks of run :id and keeps of it.
SELECT id, status, workflow, error, parent_run_id, batch_id, retried_as, rerun_from
FROM runs WHERE id = :id;

-- name: run_status
-- Status and cancel flag of run :id (no row: unknown id).
SELECT status, cancel_requested FROM runs WHERE id = :id;

-- name: request_cancel
-- Flag running run :id for cancellation; the first :reason and :canceled_by (the trace
-- context of the cancel's caller) given are kept.
UPDATE runs SET
    cancel_reason = CASE WHEN cancel_requested THEN cancel_reason ELSE :reason END,
    canceled_by = CASE WHEN cancel_requested THEN canceled_by ELSE :canceled_by END,
    cancel_requested = 1
WHERE id = :id AND status = 'running';

-- name: cancelable_in_pair
-- Up to :limit runs of (:queue, :workflow) in active :status created before :before, not
-- already cancel-requested, smallest id (oldest) first.
SELECT id, status FROM runs
WHERE queue = :queue AND workflow = :workflow AND status = :status
    AND created_at < :before
    AND NOT (status = 'running' AND cancel_requested = 1)
ORDER BY id
LIMIT :limit;

-- name: get_run
-- Every column of run :id that a RunRecord holds, and those a claim checks too
-- (records.checked_run: a run set aside as corrupt, isolate = 2, is reported as such).
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, lease_losses,
    idempotency_key, parent_run_id, retry_of, retried_as, claims, run_time, gate_limit, priority,
    timeout, progress, batch_id, deadline, rerun_from,
    status = 'queued' AND gate IS NOT NULL AND admitted = 0 AS waiting_at_gate,
    status = 'scheduled' AND rate_reserved = 1 AS rate_reserved,
    rank_offset, attempt_time, has_steps, resuming, gate, admitted, isolate, trace_context,
    woken_by
FROM runs WHERE id = :id;

-- name: leave_gate
-- If run :id holds a place at its gates, give them up; returns its gates if so.
UPDATE runs SET admitted = 0
WHERE id = :id AND gate IS NOT NULL AND admitted = 1 AND status IN ('queued', 'running')
RETURNING gate, gate_limit, gate_list;

-- name: count_admitted
-- Add :delta to the number of runs :gate admits now.
INSERT INTO gates (gate, admitted) VALUES (:gate, max(:delta, 0))
ON CONFLICT (gate) DO UPDATE SET admitted = admitted + :delta;

-- name: gate_admitted
-- How many runs :gate admits now (no row: none).
SELECT admitted FROM gates WHERE gate = :gate;

-- name: first_waiting
-- Up to :room of :gate's waiting runs, smallest rank first, with their gates.
SELECT id, queue, gate, gate_limit, gate_list FROM runs
WHERE status = 'queued' AND admitted = 0 AND gate = :gate
ORDER BY available_at - rank_offset
LIMIT :room;

-- name: admit_runs
-- Admit the waiting runs :ids (JSON array), which every gate of theirs has room for.
UPDATE runs SET admitted = 1 WHERE id IN (SELECT value FROM json_each(:ids));

-- name: wait_at_gate
-- Run :id, waiting, waits at :gate (limit :gate_limit) from now: that gate is full.
UPDATE runs SET gate = :gate, gate_limit = :gate_limit WHERE id = :id;

-- name: get_queue
-- The settings of queue :queue (no row: none set).
SELECT name, max_parallelism, paused FROM queues WHERE name = :queue;

-- name: set_queue
-- Store the settings of queue :queue.
INSERT INTO queues (name, max_parallelism, paused) VALUES (:queue, :max_parallelism, :paused)
ON CONFLICT (name) DO UPDATE SET
    max_parallelism = excluded.max_parallelism,
    paused = excluded.paused;

-- name: running_in_queue
-- How many runs of :queue are running (a run set aside as corrupt does not count).
SELECT count(*) AS running FROM runs WHERE status = 'running' AND queue = :queue AND isolate < 2;

-- name: stale_workflows
-- Names of :app's registered workflows last updated before :cutoff.
SELECT name FROM workflows WHERE app = :app AND updated_at < :cutoff ORDER BY name;

-- name: delete_workflow
-- Remove workflow :name from the registry (its runs are kept).
DELETE FROM workflows WHERE name = :name;

-- name: register_workflow
-- Store the definition of workflow :name, replacing an earlier one.
INSERT INTO workflows (
    name, app, queue, max_concurrency, retry, cron, rate_limits, limits, updated_at
)
VALUES (:name, :app, :queue, :max_concurrency, :retry, :cron, :rate_limits, :limits, :now)
ON CONFLICT (name) DO UPDATE SET
    app = excluded.app,
    queue = excluded.queue,
    max_concurrency = excluded.max_concurrency,
    retry = excluded.retry,
    cron = excluded.cron,
    rate_limits = excluded.rate_limits,
    limits = excluded.limits,
    updated_at = excluded.updated_at;

-- name: restore_workflow
-- Store the definition of workflow :name unless a record of that name exists.
INSERT INTO workflows (
    name, app, queue, max_concurrency, retry, cron, rate_limits, limits, updated_at
)
VALUES (:name, :app, :queue, :max_concurrency, :retry, :cron, :rate_limits, :limits, :now)
ON CONFLICT (name) DO NOTHING;

-- name: unregistered_workflows
-- The names in the :workflows JSON array that have no registry record, sorted.
SELECT DISTINCT wanted.value AS name FROM json_each(:workflows) AS wanted
WHERE NOT EXISTS (SELECT 1 FROM workflows WHERE workflows.name = wanted.value)
ORDER BY name;

-- name: list_workflows
-- Every registered workflow, by name.
SELECT name, app, queue, max_concurrency, retry, cron, rate_limits, limits, updated_at
FROM workflows ORDER BY name;

-- name: take_lease
-- Make :holder hold lease :name until :expires_at if it is free, expired at :now or its own.
INSERT INTO leases (name, holder, expires_at) VALUES (:name, :holder, :expires_at)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leases.holder = excluded.holder OR leases.expires_at <= :now;

-- name: limiter_tat
-- The theoretical arrival time of limiter :id (no row: never used).
SELECT tat FROM limiters WHERE id = :id;

-- name: set_limiter_tat
-- Record limiter :id's theoretical arrival time :tat.
INSERT INTO limiters (id, tat) VALUES (:id, :tat)
ON CONFLICT (id) DO UPDATE SET tat = excluded.tat;

-- name: defer_start
-- Make queued run :id scheduled at its reserved start time :start.
UPDATE runs SET status = 'scheduled', available_at = :start, admitted = gate IS NULL,
    rate_reserved = 1
WHERE id = :id;

-- name: use_reservation
-- Run :id, queued at its reserved start time, no longer holds a reservation.
UPDATE runs SET rate_reserved = 0 WHERE id = :id;

-- name: add_counters
-- Add to the counters of (:minute, :queue, :workflow).
INSERT INTO counters (
    minute, queue, workflow, executions, timed, run_time, succeeded, failed, canceled, retried
) VALUES (
    :minute, :queue, :workflow, :executions, :timed, :run_time, :succeeded, :failed, :canceled,
    :retried
)
ON CONFLICT (minute, queue, workflow) DO UPDATE SET
    executions = executions + excluded.executions,
    timed = timed + excluded.timed,
    run_time = run_time + excluded.run_time,
    succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed,
    canceled = canceled + excluded.canceled,
    retried = retried + excluded.retried;

-- name: add_hour_counters
-- Add to the counters of (:hour, :queue, :workflow).
INSERT INTO hour_counters (
    hour, queue, workflow, executions, timed, run_time, succeeded, failed, canceled, retried
) VALUES (
    :hour, :queue, :workflow, :executions, :timed, :run_time,
    :succeeded, :failed, :canceled, :retried
)
ON CONFLICT (hour, queue, workflow) DO UPDATE SET
    executions = executions + excluded.executions,
    timed = timed + excluded.timed,
    run_time = run_time + excluded.run_time,
    succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed,
    canceled = canceled + excluded.canceled,
    retried = retried + excluded.retried;

-- name: sum_counters
-- Counters of each pair summed over the minutes :first to :last, by queue and workflow.
SELECT
    queue, workflow, sum(executions) AS executions, sum(timed) AS timed,
    sum(run_time) AS run_time, sum(succeeded) AS succeeded, sum(failed) AS failed,
    sum(canceled) AS canceled, sum(retried) AS retried
FROM counters WHERE minute BETWEEN :first AND :last
GROUP BY queue, workflow
ORDER BY queue, workflow;

-- name: minute_periods
-- Counters of each pair summed per period of :period seconds, over the minutes from
-- :first to :last, oldest period first.
SELECT
    minute / :period * :period AS start, queue, workflow,
    sum(executions) AS executions, sum(timed) AS timed, sum(run_time) AS run_time,
    sum(succeeded) AS succeeded, sum(failed) AS failed, sum(canceled) AS canceled,
    sum(retried) AS retried
FROM counters WHERE minute BETWEEN :first AND :last
GROUP BY start, queue, workflow
ORDER BY start, queue, workflow;

-- name: hour_periods
-- Counters of each pair summed per period of :period seconds, over the hours from
-- :first to :last, oldest period first.
SELECT
    hour / :period * :period AS start, queue, workflow,
    sum(executions) AS executions, sum(timed) AS timed, sum(run_time) AS run_time,
    sum(succeeded) AS succeeded, sum(failed) AS failed, sum(canceled) AS canceled,
    sum(retried) AS retried
FROM hour_counters WHERE hour BETWEEN :first AND :last
GROUP BY start, queue, workflow
ORDER BY start, queue, workflow;

-- name: pair_activity
-- Every (queue, workflow) pair with its runs in each active state (runs_listed ranges).
SELECT
    queue, workflow,
    (SELECT count(*) FROM runs AS r
        WHERE r.queue = p.queue AND r.workflow = p.workflow AND r.status = 'scheduled')
        AS scheduled,
    (SELECT count(*) FROM runs AS r
        WHERE r.queue = p.queue AND r.workflow = p.workflow AND r.status = 'queued') AS queued,
    (SELECT count(*) FROM runs AS r
        WHERE r.queue = p.queue AND r.workflow = p.workflow AND r.status = 'running') AS running,
    (SELECT count(*) FROM runs AS r
        WHERE r.queue = p.queue AND r.workflow = p.workflow AND r.status = 'suspended')
        AS suspended,
    (SELECT count(*) FROM runs AS r
        WHERE r.queue = p.queue AND r.workflow = p.workflow AND r.status = 'needs_attention')
        AS needs_attention,
    (SELECT count(*) FROM runs AS r
        WHERE r.queue = p.queue AND r.workflow = p.workflow AND r.status = 'paused') AS paused
FROM run_pairs AS p
ORDER BY queue, workflow;

-- name: oldest_claimable
-- Each queue's earliest available_at among the first claimable run (by rank) of each of
-- its pairs, runs to isolate apart (NULL: none).
SELECT q.queue, (
    SELECT min(oldest) FROM (
        SELECT (
            SELECT available_at FROM runs AS r
            WHERE r.status = 'queued' AND r.admitted = 1 AND r.queue = p.queue
                AND r.workflow = p.workflow AND r.isolate = 0
            ORDER BY available_at - rank_offset LIMIT 1
        ) AS oldest
        FROM run_pairs AS p WHERE p.queue = q.queue
        UNION ALL
        SELECT (
            SELECT available_at FROM runs AS r
            WHERE r.status = 'queued' AND r.admitted = 1 AND r.queue = p.queue
                AND r.workflow = p.workflow AND r.isolate = 1
            ORDER BY available_at - rank_offset LIMIT 1
        ) AS oldest
        FROM run_pairs AS p WHERE p.queue = q.queue
    )
) AS oldest
FROM (SELECT DISTINCT queue FROM run_pairs) AS q;

-- name: pairs
-- Every (queue, workflow) pair that has had a run.
SELECT queue, workflow FROM run_pairs ORDER BY queue, workflow;

-- name: listed_ids
-- Up to :limit ids of (:queue, :workflow, :status), largest first.
SELECT id FROM runs
WHERE queue = :queue AND workflow = :workflow AND status = :status
ORDER BY id DESC
LIMIT :limit;

-- name: listed_ids_after
-- Like listed_ids, below the id :cursor.
SELECT id FROM runs
WHERE queue = :queue AND workflow = :workflow AND status = :status AND id < :cursor
ORDER BY id DESC
LIMIT :limit;

-- name: runs_by_ids
-- The runs whose ids are in the :ids JSON array, as get_run reads them, largest id first;
-- not those set aside as corrupt (isolate = 2: a listing leaves them out, as on Redis).
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, lease_losses,
    idempotency_key, parent_run_id, retry_of, retried_as, claims, run_time, gate_limit, priority,
    timeout, progress, batch_id, deadline, rerun_from, gate,
    status = 'queued' AND gate IS NOT NULL AND admitted = 0 AS waiting_at_gate,
    status = 'scheduled' AND rate_reserved = 1 AS rate_reserved
FROM runs WHERE id IN (SELECT value FROM json_each(:ids)) AND isolate < 2
ORDER BY id DESC;

-- name: purgeable_runs
-- Up to :limit terminal runs finished before :before, oldest first.
SELECT id FROM runs
WHERE status IN ('succeeded', 'failed', 'canceled') AND finished_at < :before
ORDER BY finished_at
LIMIT :limit;

-- name: delete_runs
-- Delete the runs in the :ids JSON array (their steps and idempotency keys cascade).
DELETE FROM runs WHERE id IN (SELECT value FROM json_each(:ids));

-- name: delete_counters
-- Delete the counters of minutes before :before.
DELETE FROM counters WHERE minute < :before;

-- name: delete_hour_counters
-- Delete the counters of hours before :before.
DELETE FROM hour_counters WHERE hour < :before;

-- name: pending_debounced
-- The run last enqueued with debounce key (:workflow, :key) if it is still in its window
-- at :now (scheduled for its first attempt, no rate reservation, not yet due).
SELECT runs.id, runs.queue, debounces.until FROM debounces
JOIN runs ON runs.id = debounces.run_id
WHERE debounces.workflow = :workflow AND debounces.key = :key AND runs.status = 'scheduled'
    AND runs.attempts = 0 AND runs.rate_reserved = 0 AND runs.available_at > :now;

-- name: remember_debounced
-- Make run :run_id the run of debounce key (:workflow, :key), its latest start :until.
INSERT INTO debounces (workflow, key, run_id, until) VALUES (:workflow, :key, :run_id, :until)
ON CONFLICT (workflow, key) DO UPDATE SET run_id = excluded.run_id, until = excluded.until;

-- name: collapse_debounced
-- A later enqueue's :input and start :available_at replace those of debounced run :id.
UPDATE runs SET input = :input, available_at = :available_at WHERE id = :id;

-- name: run_batch
-- The batch of run :id and whether the run has ended (no row: no such run).
SELECT batch_id, status IN ('succeeded', 'failed', 'canceled') AS ended FROM runs WHERE id = :id;

-- name: create_batch
-- Store batch :id at :now with :total runs; :open 1 or 0, :callback JSON text or NULL.
INSERT INTO batches (id, created_at, total, open, callback)
VALUES (:id, :now, :total, :open, :callback);

-- name: get_batch
-- Every column of batch :id that a BatchRecord holds, and its callback.
SELECT
    id, created_at, total, succeeded, failed, canceled, open, completed_at, callback_run_id,
    callback
FROM batches WHERE id = :id;

-- name: count_in_batch
-- Add :count runs to the total of batch :id.
UPDATE batches SET total = total + :count WHERE id = :id;

-- name: join_batch
-- Put the runs of the :ids JSON array in batch :batch_id.
UPDATE runs SET batch_id = :batch_id WHERE id IN (SELECT value FROM json_each(:ids));

-- name: batch_run_ended
-- Count a run of batch :id that ended in :status; returns the batch as now stored.
UPDATE batches SET
    succeeded = succeeded + (:status = 'succeeded'),
    failed = failed + (:status = 'failed'),
    canceled = canceled + (:status = 'canceled')
WHERE id = :id
RETURNING
    id, created_at, total, succeeded, failed, canceled, open, completed_at, callback_run_id,
    callback;

-- name: note_batch_failure
-- Keep run :run_id as the :position-th run of batch :batch_id to end failed.
INSERT INTO batch_failures (batch_id, position, run_id) VALUES (:batch_id, :position, :run_id);

-- name: batch_failures
-- The failed run ids batch :batch_id keeps, in the order they failed.
SELECT run_id FROM batch_failures WHERE batch_id = :batch_id ORDER BY position;

-- name: complete_batch
-- Mark batch :id completed at :now, its callback run (if any) :callback_run_id.
UPDATE batches SET completed_at = :now, callback_run_id = :callback_run_id WHERE id = :id;

-- name: close_batch
-- Close batch :id (no row: no such batch); returns it as now stored.
UPDATE batches SET open = 0 WHERE id = :id
RETURNING
    id, created_at, total, succeeded, failed, canceled, open, completed_at, callback_run_id,
    callback;

-- name: cancelable_in_batch
-- Up to :limit unfinished runs of batch :batch_id without a cancel request, by id.
SELECT id, status FROM runs
WHERE batch_id = :batch_id AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused')
    AND cancel_requested = 0
ORDER BY id
LIMIT :limit;

-- name: delete_completed_batches
-- Delete up to :limit batches completed before :before, oldest first (their failed run
-- ids cascade).
DELETE FROM batches WHERE id IN (
    SELECT id FROM batches
    WHERE completed_at IS NOT NULL AND completed_at < :before
    ORDER BY completed_at
    LIMIT :limit
);

-- name: rerun_source
-- What a re-run of run :id copies, and whether it may be re-run.
SELECT
    id, status, retried_as, workflow, queue, input, retry, hooks, gate, gate_limit, rate_limits,
    priority, rank_offset
FROM runs WHERE id = :id;

-- name: insert_rerun
-- Store run :new_id queued at :now, a copy of run :id (fields of rerun_source).
INSERT INTO runs (
    id, workflow, queue, status, input, retry, hooks, created_at, available_at, gate,
    gate_limit, admitted, rate_limits, retry_of, timeout, priority, rank_offset, gate_list
)
SELECT
    :new_id, workflow, queue, 'queued', input, retry, hooks, :now, :now, gate, gate_limit,
    gate IS NULL, rate_limits, id, timeout, priority, rank_offset, gate_list
FROM runs WHERE id = :id
ON CONFLICT (id) DO NOTHING
RETURNING id, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: mark_retried_as
-- Note on run :id that run :new_id re-runs it.
UPDATE runs SET retried_as = :new_id WHERE id = :id;

-- name: store_worker
-- Store worker :id's record, replacing its last one.
INSERT INTO workers (id, app, queues, workflows, started_at, seen_at, expires_at)
VALUES (:id, :app, :queues, :workflows, :started_at, :now, :expires_at)
ON CONFLICT (id) DO UPDATE SET
    app = excluded.app,
    queues = excluded.queues,
    workflows = excluded.workflows,
    seen_at = excluded.seen_at,
    expires_at = excluded.expires_at;

-- name: delete_expired_workers
-- Delete the records of workers expired at :now.
DELETE FROM workers WHERE expires_at <= :now;

-- name: delete_worker
-- Delete worker :id's record.
DELETE FROM workers WHERE id = :id;

-- name: live_workers
-- The workers whose record has not expired at :now, by id.
SELECT id, app, queues, workflows, started_at, seen_at, expires_at FROM workers
WHERE expires_at > :now
ORDER BY id;

-- name: fail_unserved_runs
-- Up to :limit claimable runs of (:queue, :workflow) available before :before, by rank
-- (it passes over later runs of higher priority).
SELECT id FROM runs
WHERE status = 'queued' AND admitted = 1 AND queue = :queue AND workflow = :workflow
    AND isolate IN (0, 1) AND available_at < :before
ORDER BY isolate, available_at - rank_offset
LIMIT :limit;

-- name: set_progress
-- Store :progress (JSON text) as run :id's latest progress.
UPDATE runs SET progress = :progress WHERE id = :id;

-- name: announce_waiter
-- Record that the socket at :address waits for work in each queue of the :queues array.
INSERT OR IGNORE INTO wakeups (queue, address)
SELECT value, :address FROM json_each(:queues);

-- name: waiters_of
-- The socket addresses waiting for work in any queue of the :queues JSON array (an
-- address waiting on several of them comes once per queue).
SELECT address FROM wakeups
WHERE queue IN (SELECT value FROM json_each(:queues));

-- name: forget_waiters
-- Drop every announcement of the socket addresses in the :addresses JSON array.
DELETE FROM wakeups WHERE address IN (SELECT value FROM json_each(:addresses));

-- name: event_target
-- Status of run :id and the event keys its suspension waits on (no row: unknown id).
SELECT status, awaited_events FROM runs WHERE id = :id;

-- name: set_woken_by
-- Run :id was woken by an event sent with :trace_context: its next claim names it.
UPDATE runs SET woken_by = (claims + 1) || ' ' || :trace_context WHERE id = :id;

-- name: event_id_seen
-- A row if run :run_id was sent an event named :event_id.
SELECT 1 FROM event_ids WHERE run_id = :run_id AND event_id = :event_id;

-- name: remember_event_id
-- Run :run_id was sent the event named :event_id (send_event stores it once).
INSERT INTO event_ids (run_id, event_id) VALUES (:run_id, :event_id);

-- name: store_event
-- Add an event of :key with :payload (JSON text) after run :run_id's earlier ones.
INSERT INTO events (run_id, key, payload) VALUES (:run_id, :key, :payload);

-- name: take_event
-- Remove the oldest event of :key sent to run :run_id; returns its payload (no row: none).
DELETE FROM events WHERE id = (
    SELECT id FROM events WHERE run_id = :run_id AND key = :key ORDER BY id LIMIT 1
)
RETURNING payload;

-- name: events_waiting
-- Whether run :run_id has an event of a key in the :keys JSON array (no row: none).
SELECT 1 FROM events
WHERE run_id = :run_id AND key IN (SELECT value FROM json_each(:keys))
LIMIT 1;

-- name: publish_value
-- Store :value (JSON text) as what run :run_id published under :key, replacing it.
INSERT INTO published (run_id, key, value) VALUES (:run_id, :key, :value)
ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value;

-- name: list_published
-- Every value run :id published, by key.
SELECT key, value FROM published WHERE run_id = :id ORDER BY key;

-- name: get_published
-- The status of run :id and the value it published under :key (no row: unknown id).
SELECT runs.status, published.value FROM runs
LEFT JOIN published ON published.run_id = runs.id AND published.key = :key
WHERE runs.id = :id;

-- name: trigger_latest_run
-- The status and claim count of the run start_tick last created for (:workflow, :trigger_id).
SELECT runs.id, runs.status, runs.claims FROM trigger_runs
JOIN runs ON runs.id = trigger_runs.run_id
WHERE trigger_runs.workflow = :workflow AND trigger_runs.trigger_id = :trigger_id;

-- name: remember_trigger_run
-- Make :run_id the latest run of (:workflow, :trigger_id).
INSERT INTO trigger_runs (workflow, trigger_id, run_id) VALUES (:workflow, :trigger_id, :run_id)
ON CONFLICT (workflow, trigger_id) DO UPDATE SET run_id = excluded.run_id;

-- name: record_skipped_tick
-- Record that the tick of (:workflow, :trigger_id) at :scheduled_at started no run.
INSERT INTO skipped_ticks (workflow, trigger_id, scheduled_at, reason, run_id, recorded_at)
VALUES (:workflow, :trigger_id, :scheduled_at, :reason, :run_id, :now);

-- name: trim_skipped_ticks
-- Keep only the newest :kept skipped ticks of (:workflow, :trigger_id).
DELETE FROM skipped_ticks
WHERE workflow = :workflow AND trigger_id = :trigger_id AND id <= (
    SELECT id FROM skipped_ticks
    WHERE workflow = :workflow AND trigger_id = :trigger_id
    ORDER BY id DESC LIMIT 1 OFFSET :kept
);

-- name: list_skipped_ticks
-- The newest :limit skipped ticks (of :workflow, or of all when NULL), latest tick first.
SELECT workflow, trigger_id, scheduled_at, reason, run_id, recorded_at FROM skipped_ticks
WHERE :workflow IS NULL OR workflow = :workflow
ORDER BY scheduled_at DESC, id DESC
LIMIT :limit;

-- name: count_failure
-- Add failed run :id of :workflow, ended at :now with error type :error_type, to its group.
INSERT INTO failure_groups (workflow, error_type, count, first_seen, last_seen, example_run_id)
VALUES (:workflow, :error_type, 1, :now, :now, :id)
ON CONFLICT (workflow, error_type) DO UPDATE SET
    count = count + 1,
    last_seen = max(last_seen, excluded.last_seen),
    example_run_id = excluded.example_run_id;

-- name: failed_among
-- The workflow, id and error of each failed run among the :ids JSON array.
SELECT id, workflow, error FROM runs
WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'failed';

-- name: uncount_failure
-- Take failed run :id out of the group (:workflow, :error_type) (before it is deleted).
UPDATE failure_groups SET
    count = count - 1,
    example_run_id = CASE WHEN example_run_id = :id THEN NULL ELSE example_run_id END
WHERE workflow = :workflow AND error_type = :error_type;

-- name: drop_empty_failure_groups
-- Delete the failure groups that count no run.
DELETE FROM failure_groups WHERE count <= 0;

-- name: failure_groups
-- Every failure group, by workflow then error type.
SELECT workflow, error_type, count, first_seen, last_seen, example_run_id
FROM failure_groups ORDER BY workflow, error_type;

-- name: bulk_candidates
-- What a bulk action checks of each run in the :ids JSON array, largest id first.
SELECT id, status, error, created_at, retried_as, cancel_requested FROM runs
WHERE id IN (SELECT value FROM json_each(:ids))
ORDER BY id DESC;
-- name: gates_in_range
-- Admitted and waiting runs of each gate with an id from :low (included) to :high.
SELECT gate, sum(admitted) AS admitted, sum(waiting) AS waiting FROM (
    SELECT gate, admitted, 0 AS waiting FROM gates
    WHERE gate >= :low AND gate < :high AND admitted > 0
    UNION ALL
    SELECT gate, 0, count(*) FROM runs
    WHERE status = 'queued' AND admitted = 0 AND gate >= :low AND gate < :high
    GROUP BY gate
) GROUP BY gate ORDER BY gate;
