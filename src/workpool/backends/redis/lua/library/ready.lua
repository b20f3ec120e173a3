-- Library: claimable runs and the signals that wake idle workers, per (queue, workflow).
--
-- A claimable run (queued: ungated, or admitted by its gate) is in the sorted set
-- ready_key(queue, workflow), so a claim takes only runs of the workflows its worker
-- defines and a run no worker defines waits there untouched. Its score is its rank,
-- available_at - rank_offset (the hash field; absent: 0, and the score is available_at
-- as stored), or, for a run to be executed alone (field isolate = '1': it lost its
-- lease, see reaping.lua), its rank - ISOLATED_OFFSET: below every rank (offsets <= 1e12
-- s, times in years 1..9999), so a pair's runs to isolate come first and a claim can range
-- past them. Scores (|x| < 4.1e12) are doubles in steps under 0.5 ms: runs 1 ms apart keep
-- their order, ties go by run id. No score is turned back into a time (head_available_at).
-- heads_key(queue) holds, per workflow with claimable runs in the queue, the lowest
-- score of its ready set (kept exact by every add and removal), so a claim finds the
-- first runs (by rank) across the workflows it serves with one ZMSCORE.
-- A worker blocks on the signal lists of the pairs it serves; a list holds at most one
-- token, pushed once per pair per script call.

local ISOLATED_OFFSET = 3e12
local ISOLATED_BELOW = -1.5e12  -- scores below it are runs to isolate

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

-- A run's rank (a decimal string): available_at less its rank_offset, if it has one.
local function rank_of(available_at, offset)
  if not offset then return available_at end
  return string.format('%.17g', tonumber(available_at) - tonumber(offset))
end

-- The available_at (a number) of the first run of (queue, workflow)'s ready set, or nil.
local function head_available_at(queue, workflow)
  local first = redis.call('ZRANGE', ready_key(queue, workflow), 0, 0)[1]
  return first and tonumber(redis.call('HGET', run_key(first), 'available_at'))
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

-- Make an existing run claimable at available_at, by rank (isolated if its field says so).
local function make_ready(run_id, queue, workflow, available_at)
  local run = redis.call('HMGET', run_key(run_id), 'isolate', 'rank_offset')
  local score = rank_of(available_at, run[2] or nil)
  if run[1] == '1' then
    score = string.format('%.17g', tonumber(score) - ISOLATED_OFFSET)
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
