-- Library: claimable runs, per (queue, workflow); their wake-ups are in waking.lua.
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

local ISOLATED_OFFSET, ISOLATED_BELOW = 3e12, -1.5e12  -- scores below: runs to isolate

local function ready_key(queue, workflow) return prefix .. ':ready:' .. pair_of(queue, workflow) end
local function heads_key(queue) return queue_key(queue, 'heads') end

-- A run's rank (a decimal string): available_at less its rank_offset, if it has one.
local function rank_of(available_at, offset)
  if not offset then return available_at end
  return string.format('%.17g', tonumber(available_at) - tonumber(offset))
end

-- The available_at (a number) of the first run of the pair's ready set, or nil (none/corrupt).
local function head_available_at(queue, workflow)
  local key = ready_key(queue, workflow)
  flush_key(key)
  local first = redis.call('ZRANGE', key, 0, 0)[1]
  return first and finite_number(redis.pcall('HGET', run_key(first), 'available_at')) or nil
end

-- The first member of (queue, workflow)'s ready set with its score ({} when empty).
local function ready_first(queue, workflow)
  local key = ready_key(queue, workflow)
  flush_key(key)
  return redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
end

-- Store the head of (queue, workflow) given its ready set's first member and score
-- (ready_first's reply, read after the set's last change).
local function store_head(queue, workflow, first)
  local key = heads_key(queue)
  flush_key(key)
  if first[2] then
    redis.call('ZADD', key, first[2], workflow)
  else
    redis.call('ZREM', key, workflow)
  end
end

-- Store the exact head of (queue, workflow): its ready set's lowest score, or none.
local function set_head(queue, workflow)
  store_head(queue, workflow, ready_first(queue, workflow))
end

-- Add a run to its pair's ready set with this score (a decimal string).
local function add_ready(run_id, queue, workflow, score)
  zadd_later(ready_key(queue, workflow), score, run_id)
  zadd_lt_later(heads_key(queue), score, workflow)
end

-- Take out of (queue, workflow)'s ready set up to most runs not to isolate, of score at
-- most upper (a number; nil: no bound); only_normal: it holds no run to isolate (then,
-- unbounded, one ZPOPMIN). Returns their ids, smallest score first, and whether it is
-- known to be empty now.
local function pop_ready(queue, workflow, most, upper, only_normal)
  local key, ids = ready_key(queue, workflow), {}
  flush_key(key)
  if only_normal and upper == nil then
    local popped = redis.call('ZPOPMIN', key, most)
    for i = 1, #popped, 2 do ids[#ids + 1] = popped[i] end
    return ids, #ids < most
  end
  local bound = upper and string.format('%.17g', upper) or '+inf'
  ids = redis.call('ZRANGEBYSCORE', key, ISOLATED_BELOW, bound, 'LIMIT', 0, most)
  for _, run_id in ipairs(ids) do zrem_later(key, run_id) end
  flush_key(key)  -- bounded commands: a range can hold more ids than unpack takes
  return ids
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
  local key = ready_key(queue, workflow)
  flush_key(key)
  if redis.call('ZREM', key, run_id) == 1 then
    set_head(queue, workflow)
  end
end
