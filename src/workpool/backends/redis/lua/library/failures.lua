-- Library: failure groups (keys.lua, failures_key): failed runs counted by (workflow,
-- error type), kept by end_run (ending.lua) and delete_run (deleting.lua).

-- The type of a stored error's JSON text ('' if it has none or is not JSON).
local function error_type_of(error_json)
  if not error_json then
    return ''
  end
  local ok, decoded = pcall(cjson.decode, error_json)
  if ok and type(decoded) == 'table' and type(decoded.type) == 'string' then
    return decoded.type
  end
  return ''
end

local function failure_group(workflow, error_json)
  return cjson.encode({ workflow, error_type_of(error_json) })
end

-- Count failed run run_id of workflow, ended at now (decimal string), its error stored.
local function count_failure(run_id, workflow, now)
  local group = failure_group(workflow, redis.call('HGET', run_key(run_id), 'error') or nil)
  local stored = redis.call('HGET', failures_key(), group)
  local entry = stored and cjson.decode(stored) or { c = 0, f = now, l = now }
  entry.c, entry.e = entry.c + 1, run_id
  if tonumber(now) >= tonumber(entry.l) then entry.l = now end
  redis.call('HSET', failures_key(), group, cjson.encode(entry))
end

-- Take failed run run_id of workflow, with error_json, out of its group (it is deleted).
local function uncount_failure(run_id, workflow, error_json)
  local group = failure_group(workflow, error_json)
  local stored = redis.call('HGET', failures_key(), group)
  if not stored then
    return
  end
  local entry = cjson.decode(stored)
  entry.c = entry.c - 1
  if entry.c <= 0 then
    redis.call('HDEL', failures_key(), group)
    return
  end
  if entry.e == run_id then entry.e = nil end
  redis.call('HSET', failures_key(), group, cjson.encode(entry))
end
