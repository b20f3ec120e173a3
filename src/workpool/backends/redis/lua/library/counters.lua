-- Library: per-minute counters (Backend docstring, "Counters"; PairCounters says what
-- counts where).
--
-- The counters of the minute starting at m (m = floor(now / 60) * 60) are the hash
-- stats_key(m), field "<counter>:<pair>" for the counters timed (attempts reported by
-- finish), reaped (attempts whose lease expired; executions = timed + reaped), run_time
-- (seconds, the sum over timed attempts), succeeded, failed, canceled and retried.
-- Every minute whose hash exists is in stats_minutes_key (get_stats and purge range over
-- it; only purge takes minutes out, with their hashes): a script call that finds none of
-- the counters it adds to in a minute's hash adds the minute there, and when the minute
-- was not there the hash is new and gets a TTL, so a minute purge never deletes still
-- vanishes.

local STATS_TTL = 25 * 3600  -- seconds
local pending_counts = {}  -- stats key -> field -> amount added during this script call
local pending_minutes = {}  -- stats key -> its minute (a decimal string)

-- Add 1 (or, for run_time, amount: a number of seconds) to a counter of the run's pair
-- (its queue and workflow) in the minute of now (a decimal string). Nothing is written
-- until flush_counts, which every operation script runs last (sources.py), so a batch
-- pays two commands per minute, not one per counter and run.
local minute_keys = {}  -- now -> the stats key of its minute, made once per call

local function count(counter, queue, workflow, now, amount)
  local key = minute_keys[now]
  if not key then
    local minute = string.format('%d', math.floor(tonumber(now) / 60) * 60)
    key = stats_key(minute)
    minute_keys[now] = key
    if not pending_counts[key] then
      pending_counts[key], pending_minutes[key] = {}, minute
    end
  end
  local fields = pending_counts[key]
  local field = counter .. ':' .. pair_of(queue, workflow)
  fields[field] = (fields[field] or 0) + (amount or 1)
end

-- Write the counts of this script call: per minute, one HMGET of the counters it adds to
-- and one HSET of their sums (integers, and run_time with 17 significant digits). If
-- none of them existed the hash may be new: its minute goes in stats_minutes_key, and a
-- minute new there gets the hash's TTL.
local function flush_counts()
  for key, fields in pairs(pending_counts) do
    local names, any_stored = {}, false
    for field in pairs(fields) do names[#names + 1] = field end
    for first = 1, #names, 1000 do  -- bounded argument lists
      local chunk = { unpack(names, first, math.min(first + 999, #names)) }
      local stored, sums = redis.call('HMGET', key, unpack(chunk)), {}
      for i, field in ipairs(chunk) do
        any_stored = any_stored or stored[i] ~= false
        local sum = (tonumber(stored[i]) or 0) + fields[field]
        sums[#sums + 1] = field
        sums[#sums + 1] = string.sub(field, 1, 9) == 'run_time:' and string.format('%.17g', sum)
          or string.format('%d', sum)
      end
      redis.call('HSET', key, unpack(sums))
    end
    local minute = pending_minutes[key]
    if not any_stored and redis.call('ZADD', stats_minutes_key(), minute, minute) == 1 then
      redis.call('EXPIRE', key, STATS_TTL)
    end
  end
end
