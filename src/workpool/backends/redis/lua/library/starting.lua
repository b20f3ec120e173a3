-- Library: leasing a claimed run to its worker (claim.lua through claiming.lua).
--
-- A claim is the table claiming.lua describes. A claimed run's reply row:
--   { run id, lease token, attempt, workflow, queue, input, retry or nil, created_at,
--     available_at, has_steps (1 or 0), claims (its fencing token), isolated (1 or 0),
--     timeout or nil, elapsed (seconds this attempt ran before it was suspended),
--     batch id or nil, trace context or nil, woken_by or nil }

local STARTED_FIELDS = { 'input', 'retry', 'has_steps', 'resuming', 'batch', 'trace',
  'woken_by' }

-- Lease one run (already out of its ready set) to this worker; append it to reply and
-- return true. A run whose record is corrupt, or not queued, is set aside (false).
local function start(claim, run_id, queue, workflow, reply, isolated)
  local problem, checked, run = run_problem(run_id, STARTED_FIELDS)
  if problem then
  elseif checked.status ~= 'queued' then
    problem = "field 'status' is " .. checked.status .. ' but the run was in a ready set'
  elseif checked.queue ~= queue or checked.workflow ~= workflow then
    problem = "field 'queue' or 'workflow' is not that of the ready set it was in"
  elseif not run[1] then
    problem = "field 'input' is missing"
  end
  if problem then
    set_aside(run_id, problem, checked, queue, workflow)
    return false
  end
  -- A resumed run claims the same attempt again (its time so far counts): the claim
  -- count keeps tokens unique. A new attempt starts with no time.
  local resuming = run[4]
  local attempt = tonumber(checked.attempts) + (resuming and 0 or 1)
  if resuming or checked.attempt_time then
    redis.call('HDEL', run_key(run_id), resuming and 'resuming' or 'attempt_time')
  end
  local claims = (tonumber(checked.claims) or 0) + 1
  local token = claim.worker_id .. ':' .. claims .. ':' .. run_id
  set_status(run_id, queue, workflow, 'queued', 'running', 'attempts', attempt, 'claims',
    claims, 'started_at', claim.now, 'lease_token', token)
  zadd_later(queue_key(queue, 'leases'), claim.lease_expires_at, run_id)
  reply[#reply + 1] = { run_id, token, attempt, workflow, queue, run[1], run[2] or false,
    checked.created_at, checked.available_at, run[3] == '1' and 1 or 0, claims,
    isolated and 1 or 0, checked.timeout or false,
    resuming and checked.attempt_time or '0', run[5] or false,
    run[6] or false, run[7] or false }
  return true
end
