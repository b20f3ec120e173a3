-- sync_registry: record the workflows a worker of one app defines (Backend.sync_registry).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  app
-- ARGV[2]  cutoff: records of this app updated before it, and not given, are removed
--          (seconds since the epoch, decimal string: now - grace)
-- ARGV[3..] pairs: workflow name, record JSON text (app, queue, max_concurrency,
--          retry, cron, rate_limits, updated_at as a decimal string)
--
-- Returns the removed names, sorted. Records of other apps, and runs, are untouched.

local app, cutoff = ARGV[1], tonumber(ARGV[2])
local registry = registry_key()
local defined = {}
for i = 3, #ARGV, 2 do
  defined[ARGV[i]] = true
end
local removed = {}
local stored = redis.call('HGETALL', registry)
for i = 1, #stored, 2 do
  local name = stored[i]
  if not defined[name] then
    local record = cjson.decode(stored[i + 1])
    if record.app == app and tonumber(record.updated_at) < cutoff then
      redis.call('HDEL', registry, name)
      removed[#removed + 1] = name
    end
  end
end
for i = 3, #ARGV, 2 do
  redis.call('HSET', registry, ARGV[i], ARGV[i + 1])
end
table.sort(removed)
return removed
