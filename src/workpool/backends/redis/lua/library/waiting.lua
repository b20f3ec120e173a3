-- Library: storing runs and putting them in (or back in) their queue.
-- Times are decimal strings (seconds since the epoch) passed through unchanged, so
-- no precision is lost to Lua's number formatting.

-- Push a token on the queue's signal list (kept at most one long) to wake a worker.
local function wake(queue)
  local signal = queue_key(queue, 'signal')
  if redis.call('LLEN', signal) == 0 then
    redis.call('RPUSH', signal, '1')
  end
end

-- Make a run waiting: queued in 'ready' if available_at <= now, else 'scheduled'.
-- The caller has already removed it from every other queue index.
local function make_waiting(run_id, queue, available_at, now)
  local status = 'queued'
  local index = 'ready'
  if tonumber(available_at) > tonumber(now) then
    status = 'scheduled'
    index = 'scheduled'
  end
  redis.call('HSET', run_key(run_id), 'status', status, 'available_at', available_at)
  redis.call('ZADD', queue_key(queue, index), available_at, run_id)
end

-- Drop the lease of a running run (its hash field and its leases entry).
local function drop_lease(run_id, queue)
  redis.call('ZREM', queue_key(queue, 'leases'), run_id)
  redis.call('HDEL', run_key(run_id), 'lease_token')
end

-- Store a new run and index it. run: id, workflow, queue, input, available_at and
-- the optional retry, hooks (JSON text) and idempotency_key. Does not wake workers
-- nor record the workflow name: batch callers do each once per batch.
local function store_run(run, now)
  local status, index = 'queued', 'ready'
  if tonumber(run.available_at) > tonumber(now) then
    status, index = 'scheduled', 'scheduled'
  end
  local fields = {
    'id', run.id, 'workflow', run.workflow, 'queue', run.queue, 'input', run.input,
    'status', status, 'attempts', '0', 'created_at', now, 'available_at', run.available_at,
    'cancel_requested', '0', 'lease_losses', '0',
  }
  for _, name in ipairs({ 'retry', 'hooks', 'idempotency_key' }) do
    if run[name] then
      fields[#fields + 1] = name
      fields[#fields + 1] = run[name]
    end
  end
  redis.call('HSET', run_key(run.id), unpack(fields))
  redis.call('ZADD', queue_key(run.queue, index), run.available_at, run.id)
  redis.call('ZADD', workflow_cancelable_key(run.workflow), now, run.id)
end
