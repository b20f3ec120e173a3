-- Library: ending the runs of a queue past their deadline (claim.lua, Backend.claim step
-- 3). A queue's 'deadlines' set holds its active runs that have a deadline, scored by it:
-- store_run adds a run, end_run and set_aside take it out. A running run found due is
-- scored again at its lease expiry, not ended: its worker stops it at its deadline, or,
-- gone, its lease expires, the reap queues it again and that claim ends it.

-- The error of a run whose deadline passed while it was status.
local function deadline_error(status)
  local message = "the run's deadline passed while " .. status .. '; it is not retried'
  return cjson.encode({ type = 'DeadlineExceededError', message = message,
    traceback = cjson.null })
end

-- End failed up to budget runs of queue whose deadline is due at now, earliest first (a
-- corrupt one is set aside). Returns the budget left.
local function expire_deadlines(queue, budget, now)
  local deadlines = queue_key(queue, 'deadlines')
  flush_key(deadlines)
  local due = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, budget)
  for _, run_id in ipairs(due) do
    local run = read_run(run_id)
    if run.problem then
      zrem_later(deadlines, run_id)
      if run.problem ~= GONE then set_aside(run_id, run.problem, run.fields, queue) end
    elseif run[1] == 'running' then
      local leases = queue_key(queue, 'leases')
      flush_key(leases)
      local expiry = tonumber(redis.call('ZSCORE', leases, run_id) or now)
      local later = math.max(expiry, tonumber(now) + 1)
      zadd_later(deadlines, string.format('%.17g', later), run_id)
    elseif TERMINAL[run[1]] then
      zrem_later(deadlines, run_id)
    else
      end_run(run_id, run, 'failed', now, { 'error', deadline_error(run[1]) })
    end
  end
  return budget - #due
end
