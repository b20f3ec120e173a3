-- get_stats: active counts per pair, counters of a range of minutes, and the oldest
-- claimable run of each queue (Backend.get_stats). Reads only.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  the first minute (its start, a whole number of seconds)
-- ARGV[2]  the last minute, likewise
--
-- Returns { activity, counters, oldest, workers }:
--   activity: flat, per pair that has had a run: pair, then its runs scheduled, queued,
--     running, suspended, needs_attention and paused (ZCARD of its list indexes, see
--     listing.lua)
--   counters: flat, per "<counter>:<pair>" field written in those minutes: the field,
--     then its sum over them (a decimal string; see counters.lua)
--   oldest: flat, per queue of those pairs with claimable runs: the queue, then the
--     earliest available_at of the first claimable run (by rank) of each of its
--     workflows (their heads, ready.lua; read from the runs, never from a score)
--   workers: the JSON text of every worker record (expired ones too: the caller
--     filters them)
-- The cost grows with the pairs and the minutes, not with the runs stored.

local ACTIVE = { 'scheduled', 'queued', 'running', 'suspended', 'needs_attention', 'paused' }

local activity, queues = {}, {}
for _, pair in ipairs(redis.call('SMEMBERS', pairs_key())) do
  activity[#activity + 1] = pair
  for _, status in ipairs(ACTIVE) do
    activity[#activity + 1] = redis.call('ZCARD', list_key(status, pair))
  end
  local colon = string.find(pair, ':', 1, true)
  queues[string.sub(pair, colon + 1, colon + tonumber(string.sub(pair, 1, colon - 1)))] = true
end

local sums, fields = {}, {}
for _, minute in ipairs(redis.call('ZRANGEBYSCORE', stats_minutes_key(), ARGV[1], ARGV[2])) do
  local stored = redis.call('HGETALL', stats_key(minute))
  for i = 1, #stored, 2 do
    local field = stored[i]
    if not sums[field] then
      sums[field] = 0
      fields[#fields + 1] = field
    end
    sums[field] = sums[field] + tonumber(stored[i + 1])
  end
end
local counters = {}
for _, field in ipairs(fields) do
  counters[#counters + 1] = field
  counters[#counters + 1] = string.format('%.17g', sums[field])
end

local oldest = {}
for queue in pairs(queues) do
  local best = nil
  for _, workflow in ipairs(redis.call('ZRANGE', heads_key(queue), 0, -1)) do
    local at = head_available_at(queue, workflow)
    if at and (best == nil or at < best) then best = at end
  end
  if best then
    oldest[#oldest + 1] = queue
    oldest[#oldest + 1] = string.format('%.17g', best)
  end
end
return { activity, counters, oldest, redis.call('HVALS', workers_key()) }
