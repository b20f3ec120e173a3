-- Library: per-minute counters (Backend docstring, "Counters"; PairCounters says what
-- counts where).
--
-- The counters of the minute starting at m (m = floor(now / 60) * 60) are the hash
-- stats_key(m), field "<counter>:<pair>" for the counters timed (attempts reported by
-- finish), reaped (attempts whose lease expired; executions = timed + reaped), run_time
-- (seconds, the sum over timed attempts), succeeded, failed, canceled and retried.
-- The first counter a script call writes in a minute adds the minute to
-- stats_minutes_key (get_stats and purge range over it; only purge takes minutes out,
-- with their hashes, so every hash's minute is in it); when the minute was not there,
-- the hash is new and gets a TTL, so a minute purge never deletes still vanishes. A
-- run pays only its HINCRBYs.

local STATS_TTL = 25 * 3600  -- seconds
local counted_minutes = {}  -- minutes recorded during this script call

-- Add 1 (or, for run_time, amount: a number of seconds) to a counter of the run's pair
-- (its queue and workflow) in the minute of now (a decimal string).
local function count(counter, queue, workflow, now, amount)
  local minute = math.floor(tonumber(now) / 60) * 60
  local key = stats_key(string.format('%d', minute))
  local field = counter .. ':' .. pair_of(queue, workflow)
  if counter == 'run_time' then
    redis.call('HINCRBYFLOAT', key, field, string.format('%.17g', amount))
  else
    redis.call('HINCRBY', key, field, 1)
  end
  if counted_minutes[minute] then
    return
  end
  counted_minutes[minute] = true
  local member = string.format('%d', minute)
  if redis.call('ZADD', stats_minutes_key(), member, member) == 1 then
    redis.call('EXPIRE', key, STATS_TTL)
  end
end
