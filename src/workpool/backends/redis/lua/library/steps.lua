-- Library: storing steps, steps that await a child run, and the parent a child wakes
-- when it ends. A step is stored as JSON text (see keys.py); it is decoded only to record
-- a child's outcome or an event's payload (take_event.lua), and its times are decimal
-- strings, so nothing is rounded.

-- Store a step of a run as its JSON text, and note that the run has steps unless its
-- has_steps field (as the caller read it) says so already.
local function store_step(run_id, name, step_json, has_steps)
  redis.call('HSET', steps_key(run_id), name, step_json)
  if has_steps ~= '1' then
    redis.call('HSET', run_key(run_id), 'has_steps', '1')
  end
end

-- Give a decoded step the outcome of its child, which ended in status at now with
-- these stored texts (nil when absent).
local function take_outcome(step, status, output, failure, reason, now)
  step.status = status
  step.finished_at = now
  if status == 'succeeded' then
    step.output = output
  elseif status == 'failed' then
    step.error = failure
  else
    step.error = cjson.encode({
      type = 'RunCanceledError', message = reason or '', traceback = cjson.null,
    })
  end
end

-- A child that just ended records its outcome in the parent's step awaiting it (if
-- that step still names it) and queues the parent again if it is suspended.
local function notify_parent(run_id, parent_id, step_name, status, stored, now)
  local steps = steps_key(parent_id)
  local text = redis.call('HGET', steps, step_name)
  if not text then
    return
  end
  local step = cjson.decode(text)
  if step.child_run_id ~= run_id then
    return
  end
  take_outcome(step, status, stored[1], stored[2], stored[3], now)
  redis.call('HSET', steps, step_name, cjson.encode(step))
  if problem_of(parent_id) then return end  -- corrupt (set aside) or gone
  local parent = redis.call('HMGET', run_key(parent_id), 'status', 'queue', 'workflow',
    'gate', 'gate_limit', 'rate')
  if parent[1] == 'suspended' then
    resume_suspended(parent_id, parent, now)
  end
end
