-- Library: terminal transitions and cancellation, down the tree of awaited children.

-- The queue index that holds a run in each non-terminal status but queued (ready.lua; a
-- suspended run is in 'scheduled' only if it has a timer; removing it when absent is ok).
local INDEX_OF_STATUS = { scheduled = 'scheduled', running = 'leases', suspended = 'scheduled' }

local cancel_one  -- defined below: end_run and cancel_one call each other

-- Cancel the children a canceled run awaits (emitted children run on); returns how
-- many runs of its subtree were canceled or cancel-requested.
local function cancel_awaited_children(run_id, now)
  local reason = 'parent run ' .. run_id .. ' was canceled'
  local changed = 0
  for _, child_id in ipairs(redis.call('LRANGE', children_key(run_id), 0, -1)) do
    if redis.pcall('HGET', run_key(child_id), 'parent_step') then  -- (not a hash: an error)
      local _, count = cancel_one(child_id, reason, now)
      changed = changed + count
    end
  end
  return changed
end

-- End a run in a terminal status: set fields, leave its indexes (deadlines.lua too) and
-- its gate (and note a running run left 'running', see queues.lua), join the finished
-- set, count the outcome (a failure in failures.lua too), fire hooks, count it in its
-- batch, tell its parent, cancel its awaited children if canceled. run: as read_run
-- returns it. fields: extra field/value pairs to store. Returns how many runs below it
-- it canceled.
local function end_run(run_id, run, status, now, fields)
  local key = run_key(run_id)
  local current, queue, workflow, hooks = run[1], run[2], run[3], run[4]
  local parent_id, parent_step, has_steps = run[5], run[6], run[7]
  if current == 'running' then  -- the spent token is overwritten, not deleted: no HDEL
    fields[#fields + 1], fields[#fields + 2] = 'lease_token', ''
    leave_running(queue)
  end
  set_status(run_id, queue, workflow, current, status, 'finished_at', now, unpack(fields))
  zadd_later(finished_key(), now, run_id)
  count(status, queue, workflow, now)
  if status == 'failed' then count_failure(run_id, workflow, now) end
  if run[10] == '1' then
    redis.call('HDEL', key, 'admitted')
  end
  if run[8] and current == 'queued' and run[10] ~= '1' then
    redis.call('ZREM', gate_waiting_key(run[8]), run_id)  -- it waited: it frees nothing
  elseif current == 'queued' then
    unready(run_id, queue, workflow)
  elseif INDEX_OF_STATUS[current] then  -- a needs_attention run is in no queue index
    zrem_later(queue_key(queue, INDEX_OF_STATUS[current]), run_id)
  end
  zrem_later(workflow_cancelable_key(workflow), run_id)
  if run.deadline then zrem_later(queue_key(queue, 'deadlines'), run_id) end
  if run[10] == '1' then
    leave_gate(run[8], run[9], run.gate_list)  -- its places go to runs waiting there
  end
  if hooks or parent_step then
    local stored = redis.call('HMGET', key, 'output', 'error', 'cancel_reason')
    stored = { stored[1] or nil, stored[2] or nil, stored[3] or nil }
    if hooks then
      local result = hook_result(status, stored[1], stored[2], stored[3])
      fire_hooks(run_id, workflow, hooks, status, result, now)
    end
    if parent_step then
      notify_parent(run_id, parent_id, parent_step, status, stored, now)
    end
  end
  if run.batch then batches().run_ended(run.batch, run_id, status, now) end
  if status == 'canceled' and has_steps == '1' then
    return cancel_awaited_children(run_id, now)
  end
  return 0
end

-- Cancel one run as Backend.cancel describes (trace: the caller's trace context, kept
-- as canceled_by when the run is running, or nil). Returns the CancelResult string (or
-- 'corrupt' and its problem: set aside) and how many runs changed (0 if none).
cancel_one = function(run_id, reason, now, trace)
  local run = read_run(run_id, 'cancel_requested')
  if set_aside_if_corrupt(run_id, run) then
    return run.problem == GONE and 'not_found' or 'corrupt', 0, run.problem
  end
  local key = run_key(run_id)
  local status = run[1]
  if TERMINAL[status] then
    return 'finished', 0
  end
  if run[11] == '1' then
    return 'requested', 0  -- already requested: the first reason given is kept
  end
  if reason then redis.call('HSET', key, 'cancel_reason', reason) end
  redis.call('HSET', key, 'cancel_requested', '1')
  if status == 'running' then
    if trace then redis.call('HSET', key, 'canceled_by', trace) end
    -- A cancel-requested run is no longer selectable by cancel_many (or cancel_batch).
    zrem_later(workflow_cancelable_key(run[3]), run_id)
    if run.batch then zrem_later(batches().cancelable_key(run.batch), run_id) end
    return 'requested', 1
  end
  return 'canceled', 1 + end_run(run_id, run, 'canceled', now, {})
end
