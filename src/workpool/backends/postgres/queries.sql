-- Named queries of the PostgreSQL backend, loaded once by sql.load_queries().
--
-- Each block starts with "-- name: <name>", then one comment line saying what it does,
-- then one statement with psycopg's %(named)s parameters (lists arrive as arrays). Times
-- are double precision seconds since the epoch. Statements that read a row before the
-- operation writes it lock it (FOR UPDATE): every operation is one READ COMMITTED
-- transaction, and the lock stands in for SQLite's single writer.

-- name: take_idempotency_key
-- Map (:workflow, :key) to :run_id until :expires_at unless a mapping unexpired at :now
-- holds it; a row when taken. A concurrent taker waits on the key and then finds it held.
INSERT INTO idempotency_keys (workflow, key, run_id, expires_at)
VALUES (%(workflow)s, %(key)s, %(run_id)s, %(expires_at)s)
ON CONFLICT (workflow, key) DO UPDATE SET run_id = excluded.run_id, expires_at = excluded.expires_at
WHERE idempotency_keys.expires_at <= %(now)s
RETURNING run_id;

-- name: find_idempotency_key
-- The run holding (:workflow, :key), if the key has not expired at :now.
SELECT run_id FROM idempotency_keys
WHERE workflow = %(workflow)s AND key = %(key)s AND expires_at > %(now)s;

-- name: drop_idempotency_key
-- Undo take_idempotency_key for :run_id (its id existed: nothing was stored).
DELETE FROM idempotency_keys
WHERE workflow = %(workflow)s AND key = %(key)s AND run_id = %(run_id)s;

-- name: insert_run
-- Store a new run in :status; no row if :id already exists.
INSERT INTO runs (
    id, workflow, queue, status, input, retry, hooks, created_at, available_at, idempotency_key,
    parent_run_id, parent_step, gate, gate_limit, admitted, rate_limits, timeout, priority,
    rank_offset, trace_context, deadline, gate_list
) VALUES (
    %(id)s, %(workflow)s, %(queue)s, %(status)s, %(input)s, %(retry)s, %(hooks)s, %(now)s,
    %(available_at)s, %(idempotency_key)s, %(parent_run_id)s, %(parent_step)s, %(gate)s,
    %(gate_limit)s, %(gate)s::text IS NULL, %(rate_limits)s, %(timeout)s, %(priority)s,
    %(rank_offset)s, %(trace_context)s, %(deadline)s, %(gate_list)s
)
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: insert_plain_runs
-- Store new runs given as arrays (no key, gate, rate limit or parent: every column not
-- named keeps its default), in array order; the ids of those stored (an id already
-- stored, or repeated in the arrays, is stored once: the first).
INSERT INTO runs (
    id, workflow, queue, status, input, retry, hooks, created_at, available_at, timeout,
    priority, rank_offset, trace_context, deadline
)
SELECT
    id, workflow, queue, status, input, retry, hooks, %(now)s, available_at, timeout,
    priority, rank_offset, trace_context, deadline
FROM unnest(
    %(ids)s::text[], %(workflows)s::text[], %(queues)s::text[], %(statuses)s::text[],
    %(inputs)s::text[], %(retries)s::text[], %(hooks)s::text[],
    %(available_at)s::double precision[], %(timeouts)s::double precision[],
    %(priorities)s::integer[], %(rank_offsets)s::double precision[],
    %(trace_contexts)s::text[], %(deadlines)s::double precision[]
) AS new (
    id, workflow, queue, status, input, retry, hooks, available_at, timeout, priority,
    rank_offset, trace_context, deadline
)
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: promote_due
-- Make up to :batch scheduled runs of :queue due at :now queued, oldest first.
UPDATE runs SET status = 'queued', admitted = gate IS NULL
WHERE id IN (
    SELECT id FROM runs
    WHERE status = 'scheduled' AND queue = %(queue)s AND available_at <= %(now)s
    ORDER BY available_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
) AND status = 'scheduled'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: promote_timers
-- Queue up to :batch suspended runs of :queue whose timer is due at :now, earliest first.
UPDATE runs SET status = 'queued', available_at = wake_at, wake_at = NULL, admitted = gate IS NULL
WHERE id IN (
    SELECT id FROM runs
    WHERE status = 'suspended' AND queue = %(queue)s AND wake_at IS NOT NULL
        AND wake_at <= %(now)s
    ORDER BY wake_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
) AND status = 'suspended'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: expired_leases
-- Up to :batch running runs of :queue whose lease expired at :now, earliest first, locked.
SELECT id, workflow, cancel_requested, lease_losses FROM runs
WHERE status = 'running' AND queue = %(queue)s AND lease_expires_at <= %(now)s
ORDER BY lease_expires_at
LIMIT %(batch)s
FOR UPDATE SKIP LOCKED;

-- name: claimable_in_queue
-- Up to :limit claimable runs of each of the :workflows in :queue with isolate = :isolate,
-- by rank, locked (one index seek per workflow, in one statement); runs another claim
-- holds are skipped, not waited for. The caller keeps the first :limit of them.
SELECT pick.id, pick.rank
FROM unnest(%(workflows)s::text[]) AS served (name)
CROSS JOIN LATERAL (
    SELECT id, available_at - rank_offset AS rank FROM runs
    WHERE status = 'queued' AND admitted AND queue = %(queue)s AND workflow = served.name
        AND isolate = %(isolate)s AND NOT set_aside
    ORDER BY available_at - rank_offset
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
) AS pick
ORDER BY pick.rank, pick.id;

-- name: oldest_isolated
-- The earliest available_at of the first claimable run to isolate (by rank) of each of
-- the :workflows in :queue.
SELECT min((
    SELECT available_at FROM runs
    WHERE status = 'queued' AND admitted AND queue = %(queue)s
        AND workflow = served.name AND isolate AND NOT set_aside
    ORDER BY available_at - rank_offset LIMIT 1
)) AS since
FROM unnest(%(workflows)s::text[]) AS served (name);

-- name: queue_workflows
-- The workflows that have had runs in :queue.
SELECT workflow FROM run_pairs WHERE queue = %(queue)s;

-- name: claim_queued
-- Lease the runs :ids to :worker_id until :expires_at.
UPDATE runs SET
    status = 'running',
    attempts = attempts + CASE WHEN resuming THEN 0 ELSE 1 END,
    attempt_time = CASE WHEN resuming THEN attempt_time ELSE 0 END,
    resuming = false,
    claims = claims + 1,
    started_at = %(now)s,
    worker_id = %(worker_id)s,
    lease_token = md5(random()::text || clock_timestamp()::text || id),
    lease_expires_at = %(expires_at)s
WHERE id = ANY(%(ids)s::text[]) AND status = 'queued'
RETURNING
    id, lease_token, workflow, queue, input, attempts, retry, created_at, available_at,
    has_steps, claims, isolate, timeout, attempt_time, batch_id, trace_context, woken_by, deadline;

-- name: next_wake_at
-- Earliest scheduled available_at, timer, lease expiry or deadline of a waiting run over
-- :queues, or NULL.
SELECT least(
    (SELECT min((SELECT available_at FROM runs
        WHERE status = 'scheduled' AND queue = wanted.name ORDER BY available_at LIMIT 1))
        FROM unnest(%(queues)s::text[]) AS wanted (name)),
    (SELECT min((SELECT wake_at FROM runs
        WHERE status = 'suspended' AND queue = wanted.name AND wake_at IS NOT NULL
        ORDER BY wake_at LIMIT 1))
        FROM unnest(%(queues)s::text[]) AS wanted (name)),
    (SELECT min((SELECT lease_expires_at FROM runs
        WHERE status = 'running' AND queue = wanted.name ORDER BY lease_expires_at LIMIT 1))
        FROM unnest(%(queues)s::text[]) AS wanted (name)),
    (SELECT min((SELECT deadline FROM runs
        WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended', 'paused')
            AND queue = wanted.name ORDER BY deadline LIMIT 1))
        FROM unnest(%(queues)s::text[]) AS wanted (name))
) AS wake_at;

-- name: past_deadline
-- Up to :batch waiting runs of :queue (not running) whose deadline is at or before :now,
-- earliest first, with their status, locked (runs_deadlines).
SELECT id, status FROM runs
WHERE deadline IS NOT NULL AND status IN ('scheduled', 'queued', 'suspended', 'paused')
    AND queue = %(queue)s AND deadline <= %(now)s AND NOT set_aside
ORDER BY deadline
LIMIT %(batch)s
FOR UPDATE SKIP LOCKED;

-- name: renew_leases
-- Extend to :expires_at each held lease of the arrays :ids, :tokens and :reported
-- (progress JSON text or null, which keeps the stored progress); a run set aside has
-- lost its lease. canceled_by is NULL unless a cancel was requested.
UPDATE runs SET lease_expires_at = %(expires_at)s,
    progress = coalesce(lease.reported, runs.progress)
FROM unnest(%(ids)s::text[], %(tokens)s::text[], %(reported)s::text[])
    AS lease (run_id, token, reported)
WHERE runs.id = lease.run_id AND runs.lease_token = lease.token AND runs.status = 'running'
    AND NOT runs.set_aside
RETURNING runs.id, runs.lease_token, runs.cancel_requested, runs.canceled_by;

-- name: held_lease
-- The run :id if it is running under lease :token (no row: the lease is not held), locked.
SELECT id, cancel_requested, queue, workflow, started_at, gate FROM runs
WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s AND NOT set_aside
FOR UPDATE;

-- name: succeed_plain
-- End the runs :ids (in id order) held under :tokens as succeeded with :outputs at :now, in
-- one statement: only those that end with nothing else to do (no gate, no hooks, no batch,
-- no parent, no cancel request), checked here as the row is locked. No row: not ended.
UPDATE runs SET
    status = 'succeeded',
    finished_at = %(now)s,
    output = coalesce(f.output, runs.output),
    lease_token = NULL,
    lease_expires_at = NULL,
    wake_at = NULL,
    run_time = runs.run_time + (%(now)s - runs.started_at)
FROM unnest(%(ids)s::text[], %(tokens)s::text[], %(outputs)s::text[]) AS f (id, token, output)
WHERE runs.id = f.id AND runs.status = 'running' AND runs.lease_token = f.token
    AND NOT runs.set_aside AND NOT runs.cancel_requested AND runs.gate IS NULL
    AND runs.hooks = '[]' AND runs.batch_id IS NULL AND runs.parent_run_id IS NULL
RETURNING runs.id, runs.queue, runs.workflow, %(now)s - runs.started_at AS ran;

-- name: end_run
-- Move unfinished run :id to terminal :status at :now, store :output/:error/:cancel_reason.
UPDATE runs SET
    status = %(status)s,
    finished_at = %(now)s,
    output = coalesce(%(output)s, output),
    error = coalesce(%(error)s, error),
    cancel_requested = cancel_requested OR %(cancel_requested)s,
    cancel_reason = coalesce(%(cancel_reason)s, cancel_reason),
    lease_token = NULL,
    lease_expires_at = NULL,
    wake_at = NULL,
    lease_losses = lease_losses + %(lease_loss)s,
    run_time = run_time + %(ran)s
WHERE id = %(id)s AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused')
RETURNING
    id, workflow, queue, status, output, error, cancel_reason, hooks, parent_run_id, parent_step,
    batch_id, rerun_from;

-- name: retry_run
-- Drop run :id's lease, store :error; scheduled at :retry_at, or queued if due at :now.
UPDATE runs SET
    status = CASE WHEN %(retry_at)s::float8 <= %(now)s::float8 THEN 'queued' ELSE 'scheduled' END,
    admitted = gate IS NULL,
    isolate = false,
    available_at = %(retry_at)s,
    error = %(error)s,
    run_time = run_time + %(ran)s,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: requeue_run
-- Drop run :id's lease and queue it again at :now, adding :lease_loss to lease_losses
-- (a lost lease also marks it to run alone); :resume: the next claim takes the same
-- attempt again (the run was handed back before it began).
UPDATE runs SET
    status = 'queued',
    resuming = resuming OR %(resume)s,
    available_at = %(now)s,
    admitted = gate IS NULL,
    isolate = isolate OR %(lease_loss)s::int > 0,
    lease_token = NULL,
    lease_expires_at = NULL,
    lease_losses = lease_losses + %(lease_loss)s
WHERE id = %(id)s
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: suspend_run
-- Drop run :id's lease, the attempt to resume: suspended until :wake_at, a child or an
-- event of the :events JSON array (NULL: none).
UPDATE runs SET
    status = 'suspended',
    resuming = true,
    run_time = run_time + %(ran)s,
    attempt_time = attempt_time + %(ran)s,
    isolate = false,
    wake_at = %(wake_at)s,
    awaited_events = %(events)s,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s;

-- name: resume_now
-- Drop run :id's lease, the attempt to resume, queued again at :now.
UPDATE runs SET
    status = 'queued',
    resuming = true,
    run_time = run_time + %(ran)s,
    attempt_time = attempt_time + %(ran)s,
    isolate = false,
    available_at = %(now)s,
    admitted = gate IS NULL,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: unfinished_among
-- How many of the runs :ids exist and have not ended.
SELECT count(*) AS unfinished FROM runs
WHERE id = ANY(%(ids)s::text[]) AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused');

-- name: record_child_outcome
-- Store child :child's outcome in step :step of run :parent, if the step still awaits it.
UPDATE steps SET status = %(status)s, output = %(output)s, error = %(error)s,
    finished_at = %(now)s
WHERE run_id = %(parent)s AND name = %(step)s AND child_run_id = %(child)s;

-- name: stop_run
-- Drop run :id's lease, the attempt to resume: needs_attention, with :error saying why,
-- until an operator reruns it from a step (rerun_from_step) or cancels it.
UPDATE runs SET
    status = 'needs_attention',
    resuming = true,
    error = %(error)s,
    run_time = run_time + %(ran)s,
    attempt_time = attempt_time + %(ran)s,
    isolate = false,
    wake_at = NULL,
    awaited_events = NULL,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s;

-- name: forget_steps_from
-- Delete step :name of run :run_id and every later one: a larger or equal position, or,
-- where either has none, a later or equal start.
DELETE FROM steps
WHERE run_id = %(run_id)s AND CASE
    WHEN position IS NULL OR %(position)s::integer IS NULL THEN started_at >= %(started_at)s
    ELSE position >= %(position)s::integer
END;

-- name: rerun_stopped
-- Queue run :id (needs_attention, failed or canceled) at :now, recording :rerun_from
-- (JSON) as why; a finished run (:fresh) leaves the finished runs with a fresh attempt.
UPDATE runs SET
    status = 'queued', available_at = %(now)s, admitted = gate IS NULL,
    rerun_from = %(rerun_from)s,
    attempts = CASE WHEN %(fresh)s THEN 0 ELSE attempts END,
    resuming = resuming AND NOT %(fresh)s,
    attempt_time = CASE WHEN %(fresh)s THEN 0 ELSE attempt_time END,
    error = CASE WHEN %(fresh)s THEN NULL ELSE error END,
    finished_at = NULL, output = NULL, cancel_reason = NULL, cancel_requested = false
WHERE id = %(id)s AND status IN ('needs_attention', 'failed', 'canceled')
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: pause_run
-- Pause run :id if it is queued or scheduled: in no queue index, no reservation held.
UPDATE runs SET status = 'paused', admitted = false, rate_reserved = false
WHERE id = %(id)s AND status IN ('queued', 'scheduled');

-- name: resume_run
-- Queue paused run :id at its available_at (scheduled if that is after :now).
UPDATE runs SET
    status = CASE WHEN available_at <= %(now)s THEN 'queued' ELSE 'scheduled' END,
    admitted = gate IS NULL
WHERE id = %(id)s AND status = 'paused'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: run_now
-- Queue scheduled run :id at :now.
UPDATE runs SET status = 'queued', available_at = %(now)s, admitted = gate IS NULL
WHERE id = %(id)s AND status = 'scheduled'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: wake_suspended
-- Queue run :id at :now if it is suspended; returns its queue when it was.
UPDATE runs SET status = 'queued', available_at = %(now)s, wake_at = NULL,
    admitted = gate IS NULL
WHERE id = %(id)s AND status = 'suspended'
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: awaited_children
-- Unfinished children of run :id that one of its steps awaits, locked.
SELECT id, status FROM runs
WHERE parent_run_id = %(id)s AND parent_step IS NOT NULL
    AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused')
ORDER BY id
FOR UPDATE;

-- name: child_outcome
-- Status and outcome fields of run :id (no row: unknown id).
SELECT id, status, output, error, cancel_reason FROM runs WHERE id = %(id)s;

-- name: save_step
-- Store step :name of run :run_id, replacing an earlier one of that name.
INSERT INTO steps (
    run_id, name, kind, status, attempts, output, error, child_run_id, wake_at, started_at,
    finished_at, position, args_hash
) VALUES (
    %(run_id)s, %(name)s, %(kind)s, %(status)s, %(attempts)s, %(output)s, %(error)s,
    %(child_run_id)s, %(wake_at)s, %(started_at)s, %(finished_at)s, %(position)s,
    %(args_hash)s
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
FROM steps WHERE run_id = %(run_id)s AND name = %(name)s;

-- name: mark_has_steps
-- Note that run :id has saved steps (claims then say so).
UPDATE runs SET has_steps = true WHERE id = %(id)s AND NOT has_steps;

-- name: get_steps
-- Every step of run :run_id, oldest first.
SELECT run_id, name, kind, status, attempts, output, error, child_run_id, wake_at, started_at,
    finished_at, position, args_hash
FROM steps WHERE run_id = %(run_id)s
ORDER BY started_at, name;

-- name: get_children
-- Ids of the runs started by run :id's steps, oldest first.
SELECT id FROM runs WHERE parent_run_id = %(id)s ORDER BY created_at, id;

-- name: rerun_check
-- What rerun_from_step checks of run :id and keeps of it; locked.
SELECT status, workflow, error, parent_run_id, batch_id, retried_as, rerun_from
FROM runs WHERE id = %(id)s FOR UPDATE;

-- name: run_status
-- Status and cancel flag of run :id (no row: unknown id), locked.
SELECT status, cancel_requested FROM runs WHERE id = %(id)s FOR UPDATE;

-- name: request_cancel
-- Flag running run :id for cancellation; the first :reason and :canceled_by (the trace
-- context of the cancel, or null) given are kept.
UPDATE runs SET
    cancel_reason = CASE WHEN cancel_requested THEN cancel_reason ELSE %(reason)s END,
    canceled_by = CASE WHEN cancel_requested THEN canceled_by ELSE %(canceled_by)s END,
    cancel_requested = true
WHERE id = %(id)s AND status = 'running';

-- name: cancelable_in_pair
-- Up to :limit runs of (:queue, :workflow) in active :status created before :before, not
-- already cancel-requested, smallest id (oldest) first.
SELECT id, status FROM runs
WHERE queue = %(queue)s AND workflow = %(workflow)s AND status = %(status)s
    AND created_at < %(before)s
    AND NOT (status = 'running' AND cancel_requested)
ORDER BY id
LIMIT %(limit)s;

-- name: get_run
-- Every column of run :id that a RunRecord holds, and those a claim checks
-- (records.checked_run; isolate 2: a claim set the run aside as corrupt).
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, lease_losses,
    idempotency_key, parent_run_id, retry_of, retried_as, claims, run_time, gate_limit, priority,
    timeout, progress, batch_id, deadline, rerun_from,
    (status = 'queued' AND gate IS NOT NULL AND NOT admitted) AS waiting_at_gate,
    (status = 'scheduled' AND rate_reserved) AS rate_reserved,
    rank_offset, attempt_time, has_steps, resuming, gate, admitted, trace_context, woken_by,
    CASE WHEN set_aside THEN 2 WHEN isolate THEN 1 ELSE 0 END AS isolate
FROM runs WHERE id = %(id)s;

-- name: leave_gate
-- If run :id holds a place at its gates, give them up; returns its gates if so.
UPDATE runs SET admitted = false
WHERE id = %(id)s AND gate IS NOT NULL AND admitted AND status IN ('queued', 'running')
RETURNING gate, gate_limit, gate_list;

-- name: count_admitted
-- Add :delta to the number of runs :gate admits now (the gate's row stays locked).
INSERT INTO gates (gate, admitted) VALUES (%(gate)s, greatest(%(delta)s, 0))
ON CONFLICT (gate) DO UPDATE SET admitted = gates.admitted + %(delta)s;

-- name: gate_admitted
-- How many runs :gate admits now, locking the gate's row (made at 0 if missing) until the
-- transaction ends, so one transaction at a time admits at a gate.
INSERT INTO gates (gate, admitted) VALUES (%(gate)s, 0)
ON CONFLICT (gate) DO UPDATE SET admitted = gates.admitted
RETURNING admitted;

-- name: first_waiting
-- Up to :room of :gate's waiting runs, smallest rank first, with their gates (locked).
SELECT id, queue, gate, gate_limit, gate_list FROM runs
WHERE status = 'queued' AND NOT admitted AND gate = %(gate)s AND NOT set_aside
ORDER BY available_at - rank_offset
LIMIT %(room)s
FOR UPDATE SKIP LOCKED;

-- name: admit_runs
-- Admit the waiting runs :ids, which every gate of theirs has room for.
UPDATE runs SET admitted = true WHERE id = ANY(%(ids)s::text[]);

-- name: wait_at_gate
-- Run :id, waiting, waits at :gate (limit :gate_limit) from now: that gate is full.
UPDATE runs SET gate = %(gate)s, gate_limit = %(gate_limit)s WHERE id = %(id)s;

-- name: other_gate_admitted
-- How many runs :gate admits now (no row: none), its row locked without waiting: a
-- transaction holding it makes this one fail and run again (see admission.py).
SELECT admitted FROM gates WHERE gate = %(gate)s FOR UPDATE NOWAIT;

-- name: get_queue
-- The settings of queue :queue (no row: none set).
SELECT name, max_parallelism, paused FROM queues WHERE name = %(queue)s;

-- name: lock_queue
-- The settings of queue :queue, locked: claims of a queue with a limit count its running
-- runs one at a time.
SELECT name, max_parallelism, paused FROM queues WHERE name = %(queue)s FOR UPDATE;

-- name: set_queue
-- Store the settings of queue :queue.
INSERT INTO queues (name, max_parallelism, paused)
VALUES (%(queue)s, %(max_parallelism)s, %(paused)s)
ON CONFLICT (name) DO UPDATE SET
    max_parallelism = excluded.max_parallelism,
    paused = excluded.paused;

-- name: running_in_queue
-- How many runs of :queue are running.
SELECT count(*) AS running FROM runs
WHERE status = 'running' AND queue = %(queue)s AND NOT set_aside;

-- name: stale_workflows
-- Names of :app's registered workflows last updated before :cutoff.
SELECT name FROM workflows WHERE app = %(app)s AND updated_at < %(cutoff)s ORDER BY name
FOR UPDATE;

-- name: delete_workflow
-- Remove workflow :name from the registry (its runs are kept).
DELETE FROM workflows WHERE name = %(name)s;

-- name: register_workflow
-- Store the definition of workflow :name, replacing an earlier one.
INSERT INTO workflows (
    name, app, queue, max_concurrency, retry, cron, rate_limits, limits, updated_at
)
VALUES (
    %(name)s, %(app)s, %(queue)s, %(max_concurrency)s, %(retry)s, %(cron)s, %(rate_limits)s,
    %(limits)s, %(now)s
)
ON CONFLICT (name) DO UPDATE SET
    app = excluded.app,
    queue = excluded.queue,
    max_concurrency = excluded.max_concurrency,
    retry = excluded.retry,
    cron = excluded.cron,
    rate_limits = excluded.rate_limits,
    limits = excluded.limits,
    updated_at = excluded.updated_at;

-- name: list_workflows
-- Every registered workflow, by name.
SELECT name, app, queue, max_concurrency, retry, cron, rate_limits, limits, updated_at
FROM workflows ORDER BY name;

-- name: take_lease
-- Make :holder hold lease :name until :expires_at if it is free, expired at :now or its own.
INSERT INTO leases (name, holder, expires_at) VALUES (%(name)s, %(holder)s, %(expires_at)s)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leases.holder = excluded.holder OR leases.expires_at <= %(now)s;

-- name: limiter_tat
-- The theoretical arrival time of limiter :id (made at :now if missing), its row locked
-- until the transaction ends.
INSERT INTO limiters (id, tat) VALUES (%(id)s, %(now)s)
ON CONFLICT (id) DO UPDATE SET tat = limiters.tat
RETURNING tat;

-- name: set_limiter_tat
-- Record limiter :id's theoretical arrival time :tat.
UPDATE limiters SET tat = %(tat)s WHERE id = %(id)s;

-- name: defer_start
-- Make queued run :id scheduled at its reserved start time :start.
UPDATE runs SET status = 'scheduled', available_at = %(start)s, admitted = gate IS NULL,
    rate_reserved = true
WHERE id = %(id)s;

-- name: use_reservation
-- Run :id, queued at its reserved start time, no longer holds a reservation.
UPDATE runs SET rate_reserved = false WHERE id = %(id)s;

-- name: add_counters
-- Add to the counters of each (minute, queue, workflow) of the arrays (no key twice), in
-- array order.
INSERT INTO counters AS c (
    minute, queue, workflow, executions, timed, run_time, succeeded, failed, canceled, retried
)
SELECT * FROM unnest(
    %(minutes)s::bigint[], %(queues)s::text[], %(workflows)s::text[],
    %(executions)s::bigint[], %(timed)s::bigint[], %(run_time)s::double precision[],
    %(succeeded)s::bigint[], %(failed)s::bigint[], %(canceled)s::bigint[],
    %(retried)s::bigint[]
)
ON CONFLICT (minute, queue, workflow) DO UPDATE SET
    executions = c.executions + excluded.executions,
    timed = c.timed + excluded.timed,
    run_time = c.run_time + excluded.run_time,
    succeeded = c.succeeded + excluded.succeeded,
    failed = c.failed + excluded.failed,
    canceled = c.canceled + excluded.canceled,
    retried = c.retried + excluded.retried;

-- name: add_hour_counters
-- Add to the counters of each (hour, queue, workflow) of the arrays (no key twice), in
-- array order.
INSERT INTO hour_counters AS c (
    hour, queue, workflow, executions, timed, run_time, succeeded, failed, canceled, retried
)
SELECT * FROM unnest(
    %(hours)s::bigint[], %(queues)s::text[], %(workflows)s::text[],
    %(executions)s::bigint[], %(timed)s::bigint[], %(run_time)s::double precision[],
    %(succeeded)s::bigint[], %(failed)s::bigint[], %(canceled)s::bigint[],
    %(retried)s::bigint[]
)
ON CONFLICT (hour, queue, workflow) DO UPDATE SET
    executions = c.executions + excluded.executions,
    timed = c.timed + excluded.timed,
    run_time = c.run_time + excluded.run_time,
    succeeded = c.succeeded + excluded.succeeded,
    failed = c.failed + excluded.failed,
    canceled = c.canceled + excluded.canceled,
    retried = c.retried + excluded.retried;

-- name: sum_counters
-- Counters of each pair summed over the minutes :first to :last, by queue and workflow.
SELECT
    queue, workflow, sum(executions) AS executions, sum(timed) AS timed,
    sum(run_time) AS run_time, sum(succeeded) AS succeeded, sum(failed) AS failed,
    sum(canceled) AS canceled, sum(retried) AS retried
FROM counters WHERE minute BETWEEN %(first)s AND %(last)s
GROUP BY queue, workflow
ORDER BY queue, workflow;

-- name: minute_periods
-- Counters of each pair summed per period of :period seconds, over the minutes from
-- :first to :last, oldest period first.
SELECT
    minute / %(period)s * %(period)s AS start, queue, workflow,
    sum(executions) AS executions, sum(timed) AS timed, sum(run_time) AS run_time,
    sum(succeeded) AS succeeded, sum(failed) AS failed, sum(canceled) AS canceled,
    sum(retried) AS retried
FROM counters WHERE minute BETWEEN %(first)s AND %(last)s
GROUP BY start, queue, workflow
ORDER BY start, queue, workflow;

-- name: hour_periods
-- Counters of each pair summed per period of :period seconds, over the hours from
-- :first to :last, oldest period first.
SELECT
    hour / %(period)s * %(period)s AS start, queue, workflow,
    sum(executions) AS executions, sum(timed) AS timed, sum(run_time) AS run_time,
    sum(succeeded) AS succeeded, sum(failed) AS failed, sum(canceled) AS canceled,
    sum(retried) AS retried
FROM hour_counters WHERE hour BETWEEN %(first)s AND %(last)s
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
SELECT p.queue, min(least(
    (SELECT available_at FROM runs AS r
        WHERE r.status = 'queued' AND r.admitted AND r.queue = p.queue
            AND r.workflow = p.workflow AND NOT r.isolate
        ORDER BY available_at - rank_offset LIMIT 1),
    (SELECT available_at FROM runs AS r
        WHERE r.status = 'queued' AND r.admitted AND r.queue = p.queue
            AND r.workflow = p.workflow AND r.isolate
        ORDER BY available_at - rank_offset LIMIT 1)
)) AS oldest
FROM run_pairs AS p
GROUP BY p.queue;

-- name: pairs
-- Every (queue, workflow) pair that has had a run.
SELECT queue, workflow FROM run_pairs ORDER BY queue, workflow;

-- name: listed_ids
-- Up to :limit ids of (:queue, :workflow, :status) below :cursor (NULL: any), largest first.
SELECT id FROM runs
WHERE queue = %(queue)s AND workflow = %(workflow)s AND status = %(status)s
    AND (%(cursor)s::text IS NULL OR id < %(cursor)s::text)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: runs_by_ids
-- The runs :ids, as get_run reads them, largest id first; not those set aside as corrupt.
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, lease_losses,
    idempotency_key, parent_run_id, retry_of, retried_as, claims, run_time, gate_limit, priority,
    timeout, progress, batch_id, deadline, rerun_from, gate,
    (status = 'queued' AND gate IS NOT NULL AND NOT admitted) AS waiting_at_gate,
    (status = 'scheduled' AND rate_reserved) AS rate_reserved
FROM runs WHERE id = ANY(%(ids)s::text[]) AND NOT set_aside
ORDER BY id DESC;

-- name: purgeable_runs
-- Up to :limit terminal runs finished before :before, oldest first, locked.
SELECT id FROM runs
WHERE status IN ('succeeded', 'failed', 'canceled') AND finished_at < %(before)s
ORDER BY finished_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: delete_counters
-- Delete the counters of minutes before :before that no other purge holds.
DELETE FROM counters WHERE (minute, queue, workflow) IN (
    SELECT minute, queue, workflow FROM counters WHERE minute < %(before)s
    ORDER BY minute, queue, workflow
    FOR UPDATE SKIP LOCKED
);

-- name: delete_hour_counters
-- Delete the counters of hours before :before that no other purge holds.
DELETE FROM hour_counters WHERE (hour, queue, workflow) IN (
    SELECT hour, queue, workflow FROM hour_counters WHERE hour < %(before)s
    ORDER BY hour, queue, workflow
    FOR UPDATE SKIP LOCKED
);

-- name: lock_debounce_key
-- Hold (:workflow, :key)'s debounce lock until the transaction ends: enqueues of one key
-- look for its pending run one at a time (the run another one stores is not visible
-- before its commit). The lock's key hashes the schema too, so pools do not share it.
SELECT pg_advisory_xact_lock(
    hashtext('workpool debounce'),
    hashtext(current_schema() || ':' || length(%(workflow)s::text) || ':' || %(workflow)s::text
        || ':' || %(key)s::text)
);

-- name: pending_debounced
-- The run last enqueued with debounce key (:workflow, :key) if it is still in its window
-- at :now (scheduled for its first attempt, no rate reservation, not yet due), locked.
SELECT runs.id, runs.queue, debounces.until FROM debounces
JOIN runs ON runs.id = debounces.run_id
WHERE debounces.workflow = %(workflow)s AND debounces.key = %(key)s
    AND runs.status = 'scheduled' AND runs.attempts = 0 AND NOT runs.rate_reserved
    AND runs.available_at > %(now)s
FOR UPDATE OF runs;

-- name: remember_debounced
-- Make run :run_id the run of debounce key (:workflow, :key), its latest start :until.
INSERT INTO debounces (workflow, key, run_id, until)
VALUES (%(workflow)s, %(key)s, %(run_id)s, %(until)s)
ON CONFLICT (workflow, key) DO UPDATE SET run_id = excluded.run_id, until = excluded.until;

-- name: collapse_debounced
-- A later enqueue's :input and start :available_at replace those of debounced run :id.
UPDATE runs SET input = %(input)s, available_at = %(available_at)s WHERE id = %(id)s;

-- name: run_batch
-- The batch of run :id and whether the run has ended (no row: no such run).
SELECT id, batch_id, status IN ('succeeded', 'failed', 'canceled') AS ended
FROM runs WHERE id = %(id)s;

-- name: create_batch
-- Store batch :id at :now with :total runs; :open, :callback JSON text or NULL.
INSERT INTO batches (id, created_at, total, open, callback)
VALUES (%(id)s, %(now)s, %(total)s, %(open)s, %(callback)s);

-- name: get_batch
-- Every column of batch :id that a BatchRecord holds, and its callback.
SELECT
    id, created_at, total, succeeded, failed, canceled, open, completed_at, callback_run_id,
    callback
FROM batches WHERE id = %(id)s;

-- name: lock_batch
-- Batch :id as get_batch reads it, locked until the transaction ends.
SELECT
    id, created_at, total, succeeded, failed, canceled, open, completed_at, callback_run_id,
    callback
FROM batches WHERE id = %(id)s FOR UPDATE;

-- name: count_in_batch
-- Add :count runs to the total of batch :id.
UPDATE batches SET total = total + %(count)s WHERE id = %(id)s;

-- name: join_batch
-- Put the runs :ids in batch :batch_id.
UPDATE runs SET batch_id = %(batch_id)s WHERE id = ANY(%(ids)s::text[]);

-- name: batch_run_ended
-- Count a run of batch :id that ended in :status; returns the batch as now stored.
UPDATE batches SET
    succeeded = succeeded + (%(status)s::text = 'succeeded')::int,
    failed = failed + (%(status)s::text = 'failed')::int,
    canceled = canceled + (%(status)s::text = 'canceled')::int
WHERE id = %(id)s
RETURNING
    id, created_at, total, succeeded, failed, canceled, open, completed_at, callback_run_id,
    callback;

-- name: note_batch_failure
-- Keep run :run_id as the :position-th run of batch :batch_id to end failed.
INSERT INTO batch_failures (batch_id, position, run_id)
VALUES (%(batch_id)s, %(position)s, %(run_id)s);

-- name: batch_failures
-- The failed run ids batch :batch_id keeps, in the order they failed.
SELECT run_id FROM batch_failures WHERE batch_id = %(batch_id)s ORDER BY position;

-- name: complete_batch
-- Mark batch :id completed at :now, its callback run (if any) :callback_run_id.
UPDATE batches SET completed_at = %(now)s, callback_run_id = %(callback_run_id)s
WHERE id = %(id)s;

-- name: close_batch
-- Close batch :id (no row: no such batch); returns it as now stored.
UPDATE batches SET open = false WHERE id = %(id)s
RETURNING
    id, created_at, total, succeeded, failed, canceled, open, completed_at, callback_run_id,
    callback;

-- name: cancelable_in_batch
-- Up to :limit unfinished runs of batch :batch_id without a cancel request, by id, locked.
SELECT id, status FROM runs
WHERE batch_id = %(batch_id)s AND status IN ('scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused')
    AND NOT cancel_requested
ORDER BY id
LIMIT %(limit)s
FOR UPDATE;

-- name: delete_completed_batches
-- Delete up to :limit batches completed before :before, oldest first.
DELETE FROM batches WHERE id IN (
    SELECT id FROM batches
    WHERE completed_at IS NOT NULL AND completed_at < %(before)s
    ORDER BY completed_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
);

-- name: rerun_source
-- What a re-run of run :id copies, and whether it may be re-run; locked.
SELECT
    id, status, retried_as, workflow, queue, input, retry, hooks, gate, gate_limit, rate_limits,
    priority, rank_offset
FROM runs WHERE id = %(id)s FOR UPDATE;

-- name: insert_rerun
-- Store run :new_id queued at :now, a copy of run :id (fields of rerun_source).
INSERT INTO runs (
    id, workflow, queue, status, input, retry, hooks, created_at, available_at, gate,
    gate_limit, admitted, rate_limits, retry_of, timeout, priority, rank_offset, gate_list
)
SELECT
    %(new_id)s, workflow, queue, 'queued', input, retry, hooks, %(now)s, %(now)s, gate,
    gate_limit, gate IS NULL, rate_limits, id, timeout, priority, rank_offset, gate_list
FROM runs WHERE id = %(id)s
ON CONFLICT (id) DO NOTHING
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved;

-- name: mark_retried_as
-- Note on run :id that run :new_id re-runs it.
UPDATE runs SET retried_as = %(new_id)s WHERE id = %(id)s;

-- name: store_worker
-- Store worker :id's record, replacing its last one.
INSERT INTO workers (id, app, queues, workflows, started_at, seen_at, expires_at)
VALUES (%(id)s, %(app)s, %(queues)s, %(workflows)s, %(started_at)s, %(now)s, %(expires_at)s)
ON CONFLICT (id) DO UPDATE SET
    app = excluded.app,
    queues = excluded.queues,
    workflows = excluded.workflows,
    seen_at = excluded.seen_at,
    expires_at = excluded.expires_at;

-- name: delete_expired_workers
-- Delete the records of workers expired at :now that no other transaction holds (workers'
-- heartbeats at once would otherwise lock the same rows in different orders: deadlocks).
DELETE FROM workers WHERE id IN (
    SELECT id FROM workers WHERE expires_at <= %(now)s ORDER BY id FOR UPDATE SKIP LOCKED
);

-- name: delete_worker
-- Delete worker :id's record.
DELETE FROM workers WHERE id = %(id)s;

-- name: live_workers
-- The workers whose record has not expired at :now, by id.
SELECT id, app, queues, workflows, started_at, seen_at, expires_at FROM workers
WHERE expires_at > %(now)s
ORDER BY id;

-- name: fail_unserved_runs
-- Up to :limit claimable runs of (:queue, :workflow) available before :before, by rank
-- (it passes over later runs of higher priority), locked.
SELECT id FROM runs
WHERE status = 'queued' AND admitted AND queue = %(queue)s AND workflow = %(workflow)s
    AND available_at < %(before)s
ORDER BY isolate, available_at - rank_offset
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: set_progress
-- Store :progress (JSON text) as run :id's latest progress.
UPDATE runs SET progress = %(progress)s WHERE id = %(id)s;

-- name: event_target
-- Status of run :id and the event keys its suspension waits on (no row: unknown id), locked.
SELECT status, awaited_events FROM runs WHERE id = %(id)s FOR UPDATE;

-- name: event_id_seen
-- A row if run :run_id was sent an event named :event_id.
SELECT 1 AS seen FROM event_ids WHERE run_id = %(run_id)s AND event_id = %(event_id)s;

-- name: remember_event_id
-- Run :run_id was sent the event named :event_id (send_event stores it once).
INSERT INTO event_ids (run_id, event_id) VALUES (%(run_id)s, %(event_id)s);

-- name: store_event
-- Add an event of :key with :payload (JSON text) after run :run_id's earlier ones.
INSERT INTO events (run_id, key, payload) VALUES (%(run_id)s, %(key)s, %(payload)s);

-- name: take_event
-- Remove the oldest event of :key sent to run :run_id; returns its payload (no row: none).
DELETE FROM events WHERE id = (
    SELECT id FROM events WHERE run_id = %(run_id)s AND key = %(key)s ORDER BY id LIMIT 1
)
RETURNING payload;

-- name: events_waiting
-- Whether run :run_id has an event of a key in :keys (no row: none).
SELECT 1 AS waiting FROM events
WHERE run_id = %(run_id)s AND key = ANY(%(keys)s::text[])
LIMIT 1;

-- name: publish_value
-- Store :value (JSON text) as what run :run_id published under :key, replacing it.
INSERT INTO published (run_id, key, value) VALUES (%(run_id)s, %(key)s, %(value)s)
ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value;

-- name: get_published
-- The status of run :id and the value it published under :key (no row: unknown id).
SELECT runs.status, published.value FROM runs
LEFT JOIN published ON published.run_id = runs.id AND published.key = %(key)s
WHERE runs.id = %(id)s;

-- name: notify
-- Wake the listeners of :channel for each of :queues, when the transaction commits; the
-- commit does not wait for its WAL flush (see notifying.py: a lost wake-up costs a poll,
-- and the database-wide lock NOTIFY holds through the commit is released sooner).
SELECT set_config('synchronous_commit', 'off', true), pg_notify(%(channel)s, queue)
FROM unnest(%(queues)s::text[]) AS queue;

-- name: notify_at_commit
-- Wake the listeners of :channel for each of :queues when the caller's transaction
-- commits (joined.py): its commit, so its durability settings are left as they are.
SELECT pg_notify(%(channel)s, queue) FROM unnest(%(queues)s::text[]) AS queue;

-- name: runs_to_check
-- The columns of the runs :ids that a claim or a reap checks before it leases or reaps
-- them (records.run_problem): get_run's, and those only claims read.
SELECT
    id, workflow, queue, status, attempts, input, output, error, retry, created_at,
    available_at, started_at, finished_at, cancel_requested, cancel_reason, lease_losses,
    idempotency_key, parent_run_id, retry_of, retried_as, claims, run_time, gate_limit, priority,
    timeout, progress, batch_id, deadline, rerun_from,
    (status = 'queued' AND gate IS NOT NULL AND NOT admitted) AS waiting_at_gate,
    (status = 'scheduled' AND rate_reserved) AS rate_reserved,
    rank_offset, attempt_time, has_steps, resuming, gate, admitted, trace_context, woken_by,
    hooks, gate_list
FROM runs WHERE id = ANY(%(ids)s::text[]);

-- name: set_aside
-- Set run :id aside, its record corrupt, as it is: out of every claim, of reaping (no
-- lease expiry) and of its queue's running count.
UPDATE runs SET set_aside = true, lease_expires_at = NULL WHERE id = %(id)s;

-- name: restore_workflow
-- Store the definition of workflow :name unless a record of that name exists.
INSERT INTO workflows (
    name, app, queue, max_concurrency, retry, cron, rate_limits, limits, updated_at
)
VALUES (
    %(name)s, %(app)s, %(queue)s, %(max_concurrency)s, %(retry)s, %(cron)s, %(rate_limits)s,
    %(limits)s, %(now)s
)
ON CONFLICT (name) DO NOTHING;

-- name: unregistered_workflows
-- The names in :workflows that have no registry record, sorted.
SELECT DISTINCT wanted.name FROM unnest(%(workflows)s::text[]) AS wanted (name)
WHERE NOT EXISTS (SELECT 1 FROM workflows WHERE workflows.name = wanted.name)
ORDER BY wanted.name;

-- name: set_woken_by
-- Run :id was woken by an event sent with :trace_context: its next claim names it.
UPDATE runs SET woken_by = (claims + 1)::text || ' ' || %(trace_context)s WHERE id = %(id)s;

-- name: list_published
-- Every value run :id published, by key.
SELECT key, value FROM published WHERE run_id = %(id)s ORDER BY key;

-- name: run_exists
-- A row if run :id is stored.
SELECT 1 AS found FROM runs WHERE id = %(id)s;

-- name: trigger_latest_run
-- The status and claim count of the run start_tick last created for (:workflow,
-- :trigger_id); the trigger's row is locked (not the run's), so ticks of it queue.
SELECT runs.id, runs.status, runs.claims FROM trigger_runs
JOIN runs ON runs.id = trigger_runs.run_id
WHERE trigger_runs.workflow = %(workflow)s AND trigger_runs.trigger_id = %(trigger_id)s
FOR UPDATE OF trigger_runs;

-- name: remember_trigger_run
-- Make :run_id the latest run of (:workflow, :trigger_id).
INSERT INTO trigger_runs (workflow, trigger_id, run_id)
VALUES (%(workflow)s, %(trigger_id)s, %(run_id)s)
ON CONFLICT (workflow, trigger_id) DO UPDATE SET run_id = excluded.run_id;

-- name: record_skipped_tick
-- Record that the tick of (:workflow, :trigger_id) at :scheduled_at started no run.
INSERT INTO skipped_ticks (workflow, trigger_id, scheduled_at, reason, run_id, recorded_at)
VALUES (%(workflow)s, %(trigger_id)s, %(scheduled_at)s, %(reason)s, %(run_id)s, %(now)s);

-- name: trim_skipped_ticks
-- Keep only the newest :kept skipped ticks of (:workflow, :trigger_id).
DELETE FROM skipped_ticks
WHERE workflow = %(workflow)s AND trigger_id = %(trigger_id)s AND id <= (
    SELECT id FROM skipped_ticks
    WHERE workflow = %(workflow)s AND trigger_id = %(trigger_id)s
    ORDER BY id DESC LIMIT 1 OFFSET %(kept)s
);

-- name: list_skipped_ticks
-- The newest :limit skipped ticks (of :workflow, or of all when NULL), latest tick first.
SELECT workflow, trigger_id, scheduled_at, reason, run_id, recorded_at FROM skipped_ticks
WHERE %(workflow)s::text IS NULL OR workflow = %(workflow)s
ORDER BY scheduled_at DESC, id DESC
LIMIT %(limit)s;

-- name: add_failures
-- Add :added failures of (:workflow, :error_type), ended from :first to :last, the
-- latest run :example, to the group.
INSERT INTO failure_groups (workflow, error_type, count, first_seen, last_seen, example_run_id)
VALUES (%(workflow)s, %(error_type)s, %(added)s, %(first)s, %(last)s, %(example)s)
ON CONFLICT (workflow, error_type) DO UPDATE SET
    count = failure_groups.count + EXCLUDED.count,
    last_seen = GREATEST(failure_groups.last_seen, EXCLUDED.last_seen),
    example_run_id = EXCLUDED.example_run_id;

-- name: remove_failures
-- Take the deleted failed runs :ids out of the group (:workflow, :error_type).
UPDATE failure_groups SET
    count = count - cardinality(%(ids)s::text[]),
    example_run_id = CASE
        WHEN example_run_id = ANY(%(ids)s::text[]) THEN NULL ELSE example_run_id END
WHERE workflow = %(workflow)s AND error_type = %(error_type)s;

-- name: drop_empty_failure_groups
-- Delete the failure groups that count no run.
DELETE FROM failure_groups WHERE count <= 0;

-- name: failure_groups
-- Every failure group, by workflow then error type.
SELECT workflow, error_type, count, first_seen, last_seen, example_run_id
FROM failure_groups ORDER BY workflow, error_type;

-- name: bulk_candidates
-- What a bulk action checks of each run of the :ids array, largest id first (unlocked:
-- each action locks and checks its run again).
SELECT id, status, error, created_at, retried_as, cancel_requested FROM runs
WHERE id = ANY(%(ids)s::text[])
ORDER BY id DESC;

-- name: delete_terminal_runs
-- Delete the runs of :ids that are terminal (steps, events and keys cascade); the
-- deleted runs.
DELETE FROM runs WHERE id = ANY(%(ids)s::text[]) AND status IN ('succeeded', 'failed', 'canceled')
RETURNING id, workflow, status, error;

-- name: lock_rerunnable
-- The runs of :ids that are failed or canceled and not re-run yet, locked, smallest id
-- first (the order every multi-row lock takes).
SELECT id FROM runs
WHERE id = ANY(%(ids)s::text[]) AND status IN ('failed', 'canceled') AND retried_as IS NULL
ORDER BY id
FOR UPDATE;

-- name: insert_reruns
-- Store, for each pair of the :ids and :new_ids arrays, run new_id queued at :now, a copy
-- of run id (as insert_rerun); the runs stored.
INSERT INTO runs (
    id, workflow, queue, status, input, retry, hooks, created_at, available_at, gate,
    gate_limit, admitted, rate_limits, retry_of, timeout, priority, rank_offset, gate_list
)
SELECT
    pairs.new_id, r.workflow, r.queue, 'queued', r.input, r.retry, r.hooks, %(now)s,
    %(now)s, r.gate, r.gate_limit, r.gate IS NULL, r.rate_limits, r.id, r.timeout,
    r.priority, r.rank_offset, r.gate_list
FROM unnest(%(ids)s::text[], %(new_ids)s::text[]) AS pairs (id, new_id)
JOIN runs AS r ON r.id = pairs.id
ON CONFLICT (id) DO NOTHING
RETURNING id, queue, status, gate, gate_limit, rate_limits, rate_reserved, retry_of;

-- name: mark_retried_as_many
-- Note on each run of the :ids array the run of :new_ids at the same place re-running it.
UPDATE runs SET retried_as = pairs.new_id
FROM unnest(%(ids)s::text[], %(new_ids)s::text[]) AS pairs (id, new_id)
WHERE runs.id = pairs.id;

-- name: gates_with_prefix
-- Admitted and waiting runs of each gate whose id starts with :prefix.
SELECT gate, sum(admitted)::bigint AS admitted, sum(waiting)::bigint AS waiting FROM (
    SELECT gate, admitted, 0 AS waiting FROM gates
    WHERE starts_with(gate, %(prefix)s) AND admitted > 0
    UNION ALL
    SELECT gate, 0, count(*) FROM runs
    WHERE status = 'queued' AND NOT admitted AND NOT set_aside AND starts_with(gate, %(prefix)s)
    GROUP BY gate
) AS usage GROUP BY gate ORDER BY gate COLLATE "C";
