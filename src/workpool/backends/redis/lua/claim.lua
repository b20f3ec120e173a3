-- claim: promote due scheduled runs, reap expired leases, then claim (Backend.claim).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  lease expiry of claimed runs: now + lease seconds (decimal string)
-- ARGV[3]  worker id (part of each lease token)
-- ARGV[4]  limit: most runs to claim (integer)
-- ARGV[5]  max lease losses: a reaped run that reaches it ends failed (integer)
-- ARGV[6..] queue names, in claim priority order
--
-- Returns { next_wake_at (decimal string) or nil, claimed run, ... }, each claimed run
--   { run id, lease token, attempt, workflow, queue, input, retry or nil,
--     created_at, available_at, has_steps (1 or 0) }
-- Promotion (of 'scheduled' members: scheduled runs and suspended runs with a timer)
-- and reaping (library/reaping.lua) each handle at most BATCH runs per call, oldest
-- first, paused queues too.
-- Runs they queue reserve a start if rate limited (unless promoted at the start they
-- reserved), then go through their gate if gated: 'ready' holds admitted runs only.
-- Taking stops at the queue's room (queues.lua); only a queue with room and claimable
-- runs left is woken for another worker, so a full or paused one never is.
local BATCH = 1000
local now, lease_expires_at, worker_id = ARGV[1], ARGV[2], ARGV[3]
local limit, max_lease_losses = tonumber(ARGV[4]), tonumber(ARGV[5])
local queues = { unpack(ARGV, 6) }

local function promote(queue, budget)
  local scheduled = queue_key(queue, 'scheduled')
  local due = redis.call('ZRANGEBYSCORE', scheduled, '-inf', now, 'LIMIT', 0, budget)
  for _, run_id in ipairs(due) do
    redis.call('ZREM', scheduled, run_id)
    local at = redis.call('HMGET', run_key(run_id), 'status', 'queue', 'workflow',
      'available_at', 'gate', 'gate_limit', 'rate', 'rate_reserved')
    if at[8] == '1' then redis.call('HDEL', run_key(run_id), 'rate_reserved') end  -- used
    make_waiting(run_id, at, at[4], now, at[5], at[6], at[8] ~= '1' and at[7])
  end
  return budget - #due
end

local function take(queue, most, reply)
  local popped = redis.call('ZPOPMIN', queue_key(queue, 'ready'), most)
  for i = 1, #popped, 2 do
    local run_id = popped[i]
    local run = redis.call('HMGET', run_key(run_id), 'attempts', 'workflow', 'queue', 'input',
      'retry', 'created_at', 'available_at', 'claims', 'has_steps')
    local attempt = tonumber(run[1]) + 1
    -- A resumed run claims the same attempt again: the claim count keeps tokens unique.
    local claims = (tonumber(run[8]) or 0) + 1
    local token = worker_id .. ':' .. claims .. ':' .. run_id
    set_status(run_id, queue, run[2], 'queued', 'running', 'attempts', attempt, 'claims',
      claims, 'started_at', now, 'lease_token', token)
    redis.call('ZADD', queue_key(queue, 'leases'), lease_expires_at, run_id)
    reply[#reply + 1] = { run_id, token, attempt, run[2], run[3], run[4], run[5], run[6],
      run[7], run[9] == '1' and 1 or 0 }
  end
  return #popped / 2
end

-- The earlier of best and the lowest score of a sorted set (decimal strings).
local function earliest(key, best)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] and (not best or tonumber(first[2]) < tonumber(best)) then return first[2] end
  return best
end

local promote_budget, reap_budget = BATCH, BATCH
for _, queue in ipairs(queues) do
  promote_budget = promote(queue, promote_budget)
  reap_budget = reap(queue, reap_budget, now, max_lease_losses)
end

-- reply[1]: next_wake_at, set below; claimed runs follow. Work left wakes another worker.
local reply, next_wake_at = { false }, nil
for _, queue in ipairs(queues) do
  local room = room_in(queue, read_settings(queue))
  local wanted, taken = math.min(limit - (#reply - 1), room), 0
  if wanted > 0 then taken = take(queue, wanted, reply) end
  if room > taken and redis.call('ZCARD', queue_key(queue, 'ready')) > 0 then wake(queue) end
  next_wake_at = earliest(queue_key(queue, 'scheduled'), next_wake_at)
  next_wake_at = earliest(queue_key(queue, 'leases'), next_wake_at)
end
reply[1] = next_wake_at or false
return reply
