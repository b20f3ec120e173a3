-- list_skipped_ticks: the newest skipped ticks of each trigger (Backend.list_skipped_ticks).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  a workflow name, or '' for every workflow
-- ARGV[2]  limit: at most this many per trigger (a whole number, at least 1)
--
-- Returns the JSON texts of the newest ARGV[2] skipped ticks of each trigger of the
-- workflow (or of every trigger), newest first per trigger; the caller merges them.
-- Reads only: the triggers are those of the skipped triggers sorted set (keys.lua).

local workflow, limit = ARGV[1], tonumber(ARGV[2])
local start = workflow ~= '' and trigger_name(workflow, '') or ''
local found = {}
for _, trigger in ipairs(redis.call('ZRANGE', skipped_triggers_key(), 0, -1)) do
  if string.sub(trigger, 1, #start) == start then
    for _, record in ipairs(redis.call('LRANGE', skipped_ticks_key(trigger), 0, limit - 1)) do
      found[#found + 1] = record
    end
  end
end
return found
