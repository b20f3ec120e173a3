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
-- Returns { next_wake_at (decimal string) or nil, claimed run, claimed run, ... }
-- where each claimed run is
--   { run id, lease token, attempt, workflow, queue, input, retry or nil,
--     created_at, available_at }
-- Promotion and reaping each handle at most BATCH runs per call, oldest first.
local BATCH = 1000
local now, lease_expires_at, worker_id = ARGV[1], ARGV[2], ARGV[3]
local limit, max_lease_losses = tonumber(ARGV[4]), tonumber(ARGV[5])
local queues = { unpack(ARGV, 6) }

local function promote(queue, budget)
  local scheduled = queue_key(queue, 'scheduled')
  local due = redis.call('ZRANGEBYSCORE', scheduled, '-inf', now, 'LIMIT', 0, budget)
  for _, run_id in ipairs(due) do
    redis.call('ZREM', scheduled, run_id)
    make_waiting(run_id, queue, redis.call('HGET', run_key(run_id), 'available_at'), now)
  end
  return budget - #due
end

local function lost_error(losses)
  local message = 'the run lost its lease ' .. losses .. ' times (the worker died or '
    .. 'stalled each time); it will not be retried'
  return cjson.encode({ type = 'WorkerLostError', message = message, traceback = cjson.null })
end

local function reap(queue, budget)
  local leases = queue_key(queue, 'leases')
  local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, budget)
  for _, run_id in ipairs(expired) do
    local losses = redis.call('HINCRBY', run_key(run_id), 'lease_losses', 1)
    local run = read_run(run_id, 'cancel_requested')
    if run[5] == '1' then
      end_run(run_id, run, 'canceled', now, {})
    elseif losses >= max_lease_losses then
      end_run(run_id, run, 'failed', now, { 'error', lost_error(losses) })
    else
      drop_lease(run_id, queue)
      make_waiting(run_id, queue, now, now)
    end
  end
  return budget - #expired
end

local function take(queue, count, reply)
  local popped = redis.call('ZPOPMIN', queue_key(queue, 'ready'), count)
  for i = 1, #popped, 2 do
    local run_id = popped[i]
    local key = run_key(run_id)
    local run = redis.call('HMGET', key, 'attempts', 'workflow', 'queue', 'input', 'retry',
      'created_at', 'available_at')
    local attempt = tonumber(run[1]) + 1
    local token = worker_id .. ':' .. attempt .. ':' .. run_id
    redis.call('HSET', key, 'attempts', attempt, 'status', 'running', 'started_at', now,
      'lease_token', token)
    redis.call('ZADD', queue_key(queue, 'leases'), lease_expires_at, run_id)
    reply[#reply + 1] = { run_id, token, attempt, run[2], run[3], run[4], run[5], run[6],
      run[7] }
  end
end

-- The earlier of best and the lowest score of a sorted set (decimal strings).
local function earliest(key, best)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] and (not best or tonumber(first[2]) < tonumber(best)) then
    return first[2]
  end
  return best
end

local promote_budget, reap_budget = BATCH, BATCH
for _, queue in ipairs(queues) do
  promote_budget = promote(queue, promote_budget)
  reap_budget = reap(queue, reap_budget)
end

-- reply[1]: next_wake_at, set below; claimed runs follow. Work left wakes another worker.
local reply = { false }
local next_wake_at = nil
for _, queue in ipairs(queues) do
  local claimed = #reply - 1
  if claimed < limit then take(queue, limit - claimed, reply) end
  if redis.call('ZCARD', queue_key(queue, 'ready')) > 0 then
    wake(queue)
  end
  next_wake_at = earliest(queue_key(queue, 'scheduled'), next_wake_at)
  next_wake_at = earliest(queue_key(queue, 'leases'), next_wake_at)
end
reply[1] = next_wake_at or false
return reply
