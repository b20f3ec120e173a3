-- Library: leasing a claimed run to its worker (claim.lua through claiming.lua).
--
-- A claim is the table claiming.lua describes. A claimed run's reply row:
--   { run id, lease token, attempt, workflow, queue, input, retry or nil, created_at,
--     available_at, has_steps (1 or 0), claims (its fencing token), isolated (1 or 0),
--     timeout or nil, elapsed (seconds this attempt ran before it was suspended),
--     batch id or nil, trace context or nil, woken_by or nil, deadline or nil }

-- What start reads (run[1..16] and its deadline, run[22]), then what it only checks (run[17..21]): the counts and
-- times that the finish, reap or retry of its lease will do arithmetic on (the claim is
-- where a bad one is reported). Not checked here: what start neither reads nor leases
-- on (started_at, finished_at, lease_token, gate, gate_limit, hooks, rate,
-- awaited_events); the finish or reap that uses one checks it.
local STARTED_FIELDS = { 'input', 'retry', 'has_steps', 'resuming', 'batch', 'trace',
  'woken_by', 'status', 'queue', 'workflow', 'attempts', 'created_at', 'available_at',
  'claims', 'timeout', 'attempt_time',
  'cancel_requested', 'lease_losses', 'rank_offset', 'priority', 'run_time', 'deadline' }

-- Set aside a run start found corrupt (problem), read whole (its gate place is freed).
local function set_aside_unstarted(run_id, problem, queue, workflow)
  local _, fields = run_problem(run_id)
  set_aside(run_id, problem, fields, queue, workflow)
end

-- Lease one run (already out of its ready set) to this worker; append it to reply and
-- return true. A run whose record is corrupt, or not queued, is set aside (false).
local function start(claim, run_id, queue, workflow, reply, isolated)
  local problem, run = read_checked(run_id, STARTED_FIELDS)
  if problem then
  elseif run[8] ~= 'queued' then
    problem = "field 'status' is " .. run[8] .. ' but the run was in a ready set'
  elseif run[9] ~= queue or run[10] ~= workflow then
    problem = "field 'queue' or 'workflow' is not that of the ready set it was in"
  elseif not run[1] then
    problem = "field 'input' is missing"
  end
  if problem then
    set_aside_unstarted(run_id, problem, queue, workflow)
    return false
  end
  -- A resumed run claims the same attempt again (its time so far counts): the claim
  -- count keeps tokens unique. A new attempt starts with no time.
  local resuming, attempt_time = run[4], run[16]
  local attempt = tonumber(run[11]) + (resuming and 0 or 1)
  if resuming or attempt_time then
    redis.call('HDEL', run_key(run_id), resuming and 'resuming' or 'attempt_time')
  end
  local claims = (tonumber(run[14]) or 0) + 1
  local token = claim.worker_id .. ':' .. claims .. ':' .. run_id
  set_status(run_id, queue, workflow, 'queued', 'running', 'attempts', attempt, 'claims',
    claims, 'started_at', claim.now, 'lease_token', token)
  zadd_later(queue_key(queue, 'leases'), claim.lease_expires_at, run_id)
  reply[#reply + 1] = { run_id, token, attempt, workflow, queue, run[1], run[2] or false,
    run[12], run[13], run[3] == '1' and 1 or 0, claims, isolated and 1 or 0, run[15] or false,
    resuming and attempt_time or '0', run[5] or false, run[6] or false, run[7] or false,
    run[22] or false }
  return true
end
