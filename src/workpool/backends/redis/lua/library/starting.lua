-- Library: leasing a claimed run to its worker (claim.lua through claiming.lua).
--
-- A claim is the table claiming.lua describes. A claimed run's reply row:
--   { run id, lease token, attempt, workflow, queue, input, retry or nil, created_at,
--     available_at, has_steps (1 or 0), claims (its fencing token), isolated (1 or 0),
--     timeout or nil, elapsed (seconds this attempt ran before it was suspended),
--     batch id or nil, trace context or nil, woken_by or nil }

-- Lease one run (already out of its ready set) to this worker; append it to reply.
local function start(claim, run_id, queue, reply, isolated)
  local run = redis.call('HMGET', run_key(run_id), 'attempts', 'workflow', 'queue', 'input',
    'retry', 'created_at', 'available_at', 'claims', 'has_steps', 'resuming', 'timeout',
    'attempt_time', 'batch', 'trace', 'woken_by')
  -- A resumed run claims the same attempt again (its time so far counts): the claim
  -- count keeps tokens unique. A new attempt starts with no time.
  local attempt = tonumber(run[1]) + (run[10] and 0 or 1)
  if run[10] or run[12] then
    redis.call('HDEL', run_key(run_id), run[10] and 'resuming' or 'attempt_time')
  end
  local claims = (tonumber(run[8]) or 0) + 1
  local token = claim.worker_id .. ':' .. claims .. ':' .. run_id
  set_status(run_id, queue, run[2], 'queued', 'running', 'attempts', attempt, 'claims',
    claims, 'started_at', claim.now, 'lease_token', token)
  zadd_later(queue_key(queue, 'leases'), claim.lease_expires_at, run_id)
  reply[#reply + 1] = { run_id, token, attempt, run[2], run[3], run[4], run[5] or false,
    run[6], run[7], run[9] == '1' and 1 or 0, claims, isolated and 1 or 0, run[11] or false,
    run[10] and run[12] or '0', run[13] or false, run[14] or false,
    run[15] or false }
end
