-- save_step: store a step of a leased run, maybe starting a child run (Backend.save_step).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  lease token
-- ARGV[4]  step name
-- ARGV[5]  step JSON text, as stored (see keys.py)
-- ARGV[6]  optional: the step's kind ('workflow' awaits the child, 'emit' does not)
-- ARGV[7..] with ARGV[6]: the child run, RUN_FIELDS values (see library/enqueueing.lua)
--
-- Returns the step JSON text as stored, or nil if the lease is not held (nothing
-- changed). Without a child the text is stored verbatim, never decoded. A bad number
-- (now, the child's: see arguments.lua) gets an error reply and nothing is written.

local now, run_id, token, name = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- Enqueue the child (or find it by its idempotency key or id) and link it to the
-- step: returns the step's JSON text with child_run_id (and outcome) filled in.
local function start_child(kind, step_json)
  local parsed = run_from_args(7)
  local child = parsed[1]
  child.parent_run_id = run_id
  if kind == 'workflow' then
    child.parent_step = name
  end
  local step = cjson.decode(step_json)
  local child_id, to_wake = enqueue_one(parsed, now)
  if child_id == nil then
    child_id = child.id
    redis.call('RPUSH', children_key(run_id), child_id)
    if to_wake then
      wake(child.queue, child.workflow)
    end
  elseif kind == 'workflow' then
    local found = redis.pcall('HMGET', run_key(child_id), 'status', 'output', 'error',
      'cancel_reason')
    if TERMINAL[found[1]] then
      take_outcome(step, found[1], found[2] or nil, found[3] or nil, found[4] or nil, now)
    end
  end
  step.child_run_id = child_id
  if kind == 'emit' then
    step.output = cjson.encode(child_id)
  end
  return cjson.encode(step)
end

local refused = bad_now() or (ARGV[6] and bad_new_run(7))
if refused then return refused end
if not lease_held(run_id, token) then
  return nil
end
local has_steps = redis.call('HGET', run_key(run_id), 'has_steps')
local step_json = ARGV[5]
if ARGV[6] then
  step_json = start_child(ARGV[6], step_json)
end
store_step(run_id, name, step_json, has_steps)
return step_json
