-- Library: per-minute and per-hour counters (Backend docstring, "Counters";
-- PairCounters says what counts where).
--
-- The counters of the minute starting at m (m = floor(now / 60) * 60) are the hash
-- stats_key(m), field "<counter>:<pair>" for the counters timed (attempts reported by
-- finish), reaped (attempts whose lease expired; executions = timed + reaped), run_time
-- (seconds, the sum over timed attempts), succeeded, failed, canceled and retried. The
-- hour starting at h (floor(now / 3600) * 3600) has the same fields in hourly_key(h);
-- every count goes to both. Every minute whose hash exists is in stats_minutes_key, and
-- every hour in hourly_hours_key (get_stats, get_counters and purge range over them;
-- only purge takes them out, with their hashes): a script call that finds none of the
-- counters it adds to in a hash adds its minute or hour there, and when it was not there
-- the hash is new and gets a TTL, so a hash purge never deletes still vanishes.

local MINUTE_TTL = 25 * 3600  -- seconds: a day and an hour
local HOUR_TTL = 8 * 24 * 3600  -- a week and a day
local pending_counts = {}  -- stats key -> field -> amount added during this script call
local pending_rows = {}  -- stats key -> { its index's key, its start (decimal), its TTL }

-- Add 1 (or, for run_time, amount: a number of seconds) to a counter of the run's pair
-- (its queue and workflow) in the minute and the hour of now (a decimal string). Nothing
-- is written until flush_counts, which every operation script runs last (sources.py), so
-- a batch pays two commands per minute and two per hour, not one per counter and run.
local row_keys = {}  -- now -> the stats keys of its minute and hour, made once per call

local function pending_row(key, index, start, ttl)
  if not pending_counts[key] then
    pending_counts[key], pending_rows[key] = {}, { index, start, ttl }
  end
end

local function count(counter, queue, workflow, now, amount)
  local keys = row_keys[now]
  if not keys then
    local at = tonumber(now)
    local minute = string.format('%d', math.floor(at / 60) * 60)
    local hour = string.format('%d', math.floor(at / 3600) * 3600)
    keys = { stats_key(minute), hourly_key(hour) }
    row_keys[now] = keys
    pending_row(keys[1], stats_minutes_key(), minute, MINUTE_TTL)
    pending_row(keys[2], hourly_hours_key(), hour, HOUR_TTL)
  end
  local field = counter .. ':' .. pair_of(queue, workflow)
  for _, key in ipairs(keys) do
    local fields = pending_counts[key]
    fields[field] = (fields[field] or 0) + (amount or 1)
  end
end

-- Write the counts of this script call: per minute and per hour, one HMGET of the
-- counters it adds to and one HSET of their sums (integers, and run_time with 17
-- significant digits). If none of them existed the hash may be new: its start goes in
-- its index, and a start new there gets the hash's TTL.
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
    local index, start, ttl = unpack(pending_rows[key])
    if not any_stored and redis.call('ZADD', index, start, start) == 1 then
      redis.call('EXPIRE', key, ttl)
    end
  end
end
