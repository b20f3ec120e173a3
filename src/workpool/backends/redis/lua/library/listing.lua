-- Library: the listing indexes (Backend docstring, "Listing") and set_status, the one
-- function through which every status of a run is written.
--
-- A run is in exactly one list index: list_key(its status, pair_of(its queue, its
-- workflow)), a sorted set whose members all score 0, so ZREVRANGEBYLEX reads a page
-- by id. pairs_key names every pair that has had a run: a new run's pair is added once
-- per script call. Terminal runs are also in finished_key, scored by finished_at
-- (end_run adds them, purge takes them out). Index writes are deferred (deferred.lua).

local noted_pairs = {}  -- pairs added to pairs_key during this script call

-- Write a run's status to (and the other hash field/value pairs given after it) and
-- move its list entry from the index of its status before (from; nil for a new run,
-- whose pair is then noted) to that of to. The run's queue and workflow name its pair.
local function set_status(run_id, queue, workflow, from, to, ...)
  redis.call('HSET', run_key(run_id), 'status', to, ...)
  if from == to then
    return
  end
  local pair = pair_of(queue, workflow)
  if from then
    zrem_later(list_key(from, pair), run_id)
  elseif not noted_pairs[pair] then
    noted_pairs[pair] = true
    redis.call('SADD', pairs_key(), pair)
  end
  zadd_later(list_key(to, pair), 0, run_id)
end

local LISTED_STATUSES = { 'scheduled', 'queued', 'running', 'suspended', 'needs_attention',
  'paused', 'succeeded', 'failed', 'canceled' }

-- Whether id a sorts after id b byte by byte, as Redis orders members (Lua's own
-- string comparison follows the server's collation locale).
local function sorts_after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return #a > #b
end

-- The pairs the queue and workflow filters (nil: any) match.
local function matching_pairs(queue, workflow)
  if queue and workflow then
    return { pair_of(queue, workflow) }
  end
  local matching = {}
  for _, pair in ipairs(redis.call('SMEMBERS', pairs_key())) do
    local colon = string.find(pair, ':', 1, true)
    local length = tonumber(string.sub(pair, 1, colon - 1))
    local its_queue = string.sub(pair, colon + 1, colon + length)
    local its_workflow = string.sub(pair, colon + length + 2)
    if (not queue or queue == its_queue) and (not workflow or workflow == its_workflow) then
      matching[#matching + 1] = pair
    end
  end
  return matching
end

-- Up to limit ids below cursor (nil: from the largest), largest first, of the runs in
-- statuses of the pairs queue and workflow match: at most limit ids read from each
-- list index, then merged, so the cost grows with the pairs, not with the runs stored.
local function listed_ids(statuses, queue, workflow, cursor, limit)
  local max = cursor and '(' .. cursor or '+'
  local lists = {}
  for _, pair in ipairs(matching_pairs(queue, workflow)) do
    for _, each in ipairs(statuses) do
      local ids = redis.call('ZREVRANGEBYLEX', list_key(each, pair), max, '-', 'LIMIT', 0, limit)
      if #ids > 0 then
        lists[#lists + 1] = { ids = ids, next = 1 }
      end
    end
  end
  local merged = {}
  while #merged < limit do
    local best = nil
    for _, list in ipairs(lists) do
      local head = list.ids[list.next]
      if head and (not best or sorts_after(head, best.ids[best.next])) then
        best = list
      end
    end
    if not best then
      break
    end
    merged[#merged + 1] = best.ids[best.next]
    best.next = best.next + 1
  end
  return merged
end
