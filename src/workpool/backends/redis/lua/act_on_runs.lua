-- act_on_runs: apply a bulk action to one page of the runs a filter selects
-- (Backend.act_on_runs).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  JSON object: action, statuses (array), limit, new_ids (array), and
--          optionally cursor, workflow, queue, error_type, created_from and
--          created_before (decimal strings), reason
--
-- Returns { changed, cursor or false }. Candidates are listed_ids (listing.lua); each
-- is read and judged as stored now; a record that is not a hash is passed over.

local now = ARGV[1]
local o = cjson.decode(ARGV[2])
local kind = string.gsub(o.action, '^count_', '')
local counting = kind ~= o.action
local wanted = {}
for _, status in ipairs(o.statuses) do wanted[status] = true end
local from, before = tonumber(o.created_from), tonumber(o.created_before)

-- Whether the action changes run_id (fields: status, error, created_at, retried_as,
-- cancel_requested).
local function qualifies(f)
  if not f[1] or not wanted[f[1]] then
    return false
  elseif o.error_type and error_type_of(f[2] or nil) ~= o.error_type then
    return false
  end
  local created = tonumber(f[3]) or 0
  if (from and created < from) or (before and created >= before) then
    return false
  elseif kind == 'retry' then
    return (f[1] == 'failed' or f[1] == 'canceled') and not f[4]
  elseif kind == 'cancel' then
    return not TERMINAL[f[1]] and f[5] ~= '1'
  end
  return TERMINAL[f[1]] == true
end

local ids = listed_ids(o.statuses, o.queue, o.workflow, o.cursor, o.limit)
local changed, fresh = 0, 1
for _, run_id in ipairs(ids) do
  local f = redis.pcall('HMGET', run_key(run_id), 'status', 'error', 'created_at',
    'retried_as', 'cancel_requested')
  if not f.err and qualifies(f) then
    local done = true  -- a count changes nothing; delete_run cannot refuse
    if kind == 'retry' and not counting then
      done = rerun_one(run_id, o.new_ids[fresh], now) == 'created'
      fresh = fresh + 1
    elseif kind == 'cancel' and not counting then
      local result = cancel_one(run_id, o.reason, now)
      done = result == 'canceled' or result == 'requested'
    elseif kind == 'delete' and not counting then
      delete_run(run_id)
    end
    if done then changed = changed + 1 end
  end
end
return { changed, #ids == o.limit and ids[#ids] or false }
