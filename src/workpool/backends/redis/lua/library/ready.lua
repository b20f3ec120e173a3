-- Library: claimable runs and the signals that wake idle workers, per (queue, workflow).
--
-- A claimable run (queued: ungated, or admitted by its gate) is in the sorted set
-- ready_key(queue, workflow), so a claim takes only runs of the workflows its worker
-- defines and a run no worker defines waits there untouched. Its score is its
-- available_at, or, for a run to be executed alone (field isolate = '1': it lost its
-- lease, see reaping.lua), available_at - ISOLATED_OFFSET: far below every real time,
-- so the runs to isolate of a pair come first and a claim can range past them.
-- heads_key(queue) holds, per workflow with claimable runs in the queue, the lowest
-- score of its ready set (kept exact by every add and removal), so a claim finds the
-- oldest runs across the workflows it serves with one ZMSCORE.
-- A worker blocks on the signal lists of the pairs it serves; a list holds at most one
-- token, pushed once per pair per script call.

local ISOLATED_OFFSET = 1e12
local ISOLATED_BELOW = -5e11  -- scores below it are runs to isolate

local function ready_key(queue, workflow)
  return prefix .. ':ready:' .. pair_of(queue, workflow)
end

local function heads_key(queue)
  return queue_key(queue, 'heads')
end

local function signal_key(queue, workflow)
  return prefix .. ':signal:' .. pair_of(queue, workflow)
end

local woken_signals = {}  -- signal lists given a token during this script call

-- Wake a worker serving (queue, workflow).
local function wake(queue, workflow)
  local signal = signal_key(queue, workflow)
  if woken_signals[signal] then
    return
  end
  woken_signals[signal] = true
  if redis.call('LLEN', signal) == 0 then
    redis.call('RPUSH', signal, '1')
  end
end

-- The real time a ready score stands for (a number).
local function time_of_score(score)
  local value = tonumber(score)
  if value < ISOLATED_BELOW then
    return value + ISOLATED_OFFSET
  end
  return value
end

-- Store the exact head of (queue, workflow): its ready set's lowest score, or none.
local function set_head(queue, workflow)
  local first = redis.call('ZRANGE', ready_key(queue, workflow), 0, 0, 'WITHSCORES')
  if first[2] then
    redis.call('ZADD', heads_key(queue), first[2], workflow)
  else
    redis.call('ZREM', heads_key(queue), workflow)
  end
end

-- Add a run to its pair's ready set with this score (a decimal string).
local function add_ready(run_id, queue, workflow, score)
  redis.call('ZADD', ready_key(queue, workflow), score, run_id)
  redis.call('ZADD', heads_key(queue), 'LT', score, workflow)
end

-- Make an existing run claimable at available_at (isolated if its field says so).
local function make_ready(run_id, queue, workflow, available_at)
  local score = available_at
  if redis.call('HGET', run_key(run_id), 'isolate') == '1' then
    score = string.format('%.17g', tonumber(available_at) - ISOLATED_OFFSET)
  end
  add_ready(run_id, queue, workflow, score)
end

-- Take a run out of its pair's ready set (if it is there).
local function unready(run_id, queue, workflow)
  if redis.call('ZREM', ready_key(queue, workflow), run_id) == 1 then
    set_head(queue, workflow)
  end
end

-- Wake the workers of up to most workflows with claimable runs in the queue, oldest
-- first; returns whether it has any.
local function wake_queue(queue, most)
  local first = redis.call('ZRANGE', heads_key(queue), 0, most - 1)
  for _, workflow in ipairs(first) do
    wake(queue, workflow)
  end
  return #first > 0
end
