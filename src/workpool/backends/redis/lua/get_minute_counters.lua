-- get_minute_counters: the counters of each minute of a range, minute by minute
-- (Backend.get_minute_counters; get_stats.lua sums the same hashes). Reads only.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  the first minute (its start, a whole number of seconds)
-- ARGV[2]  the last minute, likewise
--
-- Returns a flat list: per minute of the range in stats_minutes_key, oldest first, the
-- minute (a decimal string), then its hash as HGETALL gives it ("<counter>:<pair>"
-- fields and their values, flat; see counters.lua), empty if the hash expired.
-- The cost grows with the minutes and the pairs, not with the runs stored.

local reply = {}
for _, minute in ipairs(redis.call('ZRANGEBYSCORE', stats_minutes_key(), ARGV[1], ARGV[2])) do
  reply[#reply + 1] = minute
  reply[#reply + 1] = redis.call('HGETALL', stats_key(minute))
end
return reply
