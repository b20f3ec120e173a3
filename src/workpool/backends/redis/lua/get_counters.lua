-- get_counters: the counters of a range summed per period (Backend.get_counters;
-- get_stats.lua sums the same minute hashes over its whole range). Reads only.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  the start of the first row to read (a whole number of seconds)
-- ARGV[2]  the start of the last row to read, likewise
-- ARGV[3]  the period (seconds): rows go to the period floor(start / period) * period
-- ARGV[4]  'hour': the per-hour hashes; anything else: the per-minute ones
--
-- Returns a flat list: per period with a row in the range, oldest first, its start (a
-- decimal string), then the sums of its rows' fields ("<counter>:<pair>" fields and
-- their values, flat; see counters.lua). The cost grows with the rows read and the
-- pairs, not with the runs stored.

local period = tonumber(ARGV[3])
local index, row_key = stats_minutes_key(), stats_key
if ARGV[4] == 'hour' then
  index, row_key = hourly_hours_key(), hourly_key
end

local starts, sums, fields = {}, {}, {}
for _, row in ipairs(redis.call('ZRANGEBYSCORE', index, ARGV[1], ARGV[2])) do
  local start = math.floor(tonumber(row) / period) * period
  if not sums[start] then
    starts[#starts + 1] = start
    sums[start], fields[start] = {}, {}
  end
  local these, names = sums[start], fields[start]
  local stored = redis.call('HGETALL', row_key(row))
  for i = 1, #stored, 2 do
    local field = stored[i]
    if not these[field] then
      these[field] = 0
      names[#names + 1] = field
    end
    these[field] = these[field] + tonumber(stored[i + 1])
  end
end

local reply = {}
for _, start in ipairs(starts) do
  local flat = {}
  for _, field in ipairs(fields[start]) do
    local sum = sums[start][field]
    flat[#flat + 1] = field
    flat[#flat + 1] = string.sub(field, 1, 9) == 'run_time:' and string.format('%.17g', sum)
      or string.format('%d', sum)
  end
  reply[#reply + 1] = string.format('%d', start)
  reply[#reply + 1] = flat
end
return reply
