-- cancel_many: cancel up to a limit of matching non-terminal runs (Backend.cancel_many).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  JSON object: limit (integer) and optionally before (seconds, decimal
--          string: only runs created strictly earlier), workflow, reason
--
-- Returns the number of runs canceled or cancel-requested, including the awaited
-- children canceled with their parent (so it may exceed the limit).
--
-- Selects from the workflows' 'cancelable' sorted sets (non-terminal runs without a
-- cancel request, scored by created_at): every member read matches, so each call costs
-- O(workflows + log n + limit) however the matching runs are interleaved with others.
-- Without a workflow it walks every workflow of the pairs set, and those of the legacy
-- workflows set that versions before it wrote (see keys.lua).

local now = ARGV[1]
local options = cjson.decode(ARGV[2])
if options.limit <= 0 then
  return 0
end

-- Every workflow that has had a run, each once.
local function every_workflow()
  local seen, names = {}, {}
  local function add(name)
    if not seen[name] then
      seen[name] = true
      names[#names + 1] = name
    end
  end
  for _, pair in ipairs(redis.call('SMEMBERS', pairs_key())) do
    local colon = string.find(pair, ':', 1, true)
    add(string.sub(pair, colon + tonumber(string.sub(pair, 1, colon - 1)) + 2))
  end
  for _, name in ipairs(redis.call('SMEMBERS', legacy_workflows_key())) do add(name) end
  return names
end

local workflows = options.workflow and { options.workflow } or every_workflow()
local max = '+inf'
if options.before then
  max = '(' .. options.before
end
local done = 0
for _, workflow in ipairs(workflows) do
  local key = workflow_cancelable_key(workflow)
  flush_key(key)  -- runs canceled with a parent already left it
  local selected = redis.call('ZRANGEBYSCORE', key, '-inf', max,
    'LIMIT', 0, options.limit - done)
  for _, run_id in ipairs(selected) do
    -- A run selected here may already have been canceled with its parent: it counts 0.
    local _, changed = cancel_one(run_id, options.reason, now)
    done = done + changed
  end
  if done >= options.limit then
    break
  end
end
return done
