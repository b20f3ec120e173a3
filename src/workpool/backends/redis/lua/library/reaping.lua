-- Library: reaping the runs of a queue whose lease expired (claim.lua, Backend.claim
-- step 2). Each reaped attempt counts as reaped (an execution without a known duration).

-- The error of a run that lost its lease too often.
local function lost_error(losses)
  local message = 'the run lost its lease ' .. losses .. ' times (the worker died or '
    .. 'stalled each time); it will not be retried'
  return cjson.encode({ type = 'WorkerLostError', message = message, traceback = cjson.null })
end

-- Reap one run whose lease expired (reap says how); run: as read_run returns it.
local function reap_one(run_id, run, now, max_lease_losses, to_wake)
  local losses = redis.call('HINCRBY', run_key(run_id), 'lease_losses', 1)
  count('reaped', run[2], run[3], now)
  if run[11] == '1' then
    end_run(run_id, run, 'canceled', now, {})
  elseif losses >= max_lease_losses then
    end_run(run_id, run, 'failed', now, { 'error', lost_error(losses) })
  else
    -- Its worker died or stalled, maybe because of another run it held: it runs alone
    -- next (claim.lua), so a death that follows is its own.
    drop_lease(run_id, run, { 'isolate', '1' })
    if make_waiting(run_id, run, now, now, run[8], run[9], run[12]) then
      to_wake[run[3]] = true
    end
    count('retried', run[2], run[3], now)
  end
end

-- Reap up to budget expired leases of queue, oldest expiry first: a run with a cancel
-- request ends canceled, one that lost its lease max_lease_losses times ends failed,
-- others are queued again now, to run alone (counted as retried), their workflows noted
-- in to_wake (workflow -> true) for the caller; a corrupt one is set aside. Returns the
-- budget left.
local function reap(queue, budget, now, max_lease_losses, to_wake)
  local leases = queue_key(queue, 'leases')
  flush_key(leases)
  local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, budget)
  for _, run_id in ipairs(expired) do
    local run = read_run(run_id, 'cancel_requested', 'rate')
    if run.problem then  -- (GONE too: an entry without a record)
      set_aside(run_id, run.problem, run.fields, queue)
    else
      reap_one(run_id, run, now, max_lease_losses, to_wake)
    end
  end
  return budget - #expired
end
