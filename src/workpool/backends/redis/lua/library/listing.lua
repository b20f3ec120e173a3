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
