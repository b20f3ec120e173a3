-- Library: terminal transitions, completion hooks and cancellation.

-- The "result" member of a hook run's input, composed from stored JSON texts.
local function hook_result(status, output, failure, reason)
  if status == 'succeeded' then
    return '{"status":"succeeded","output":' .. (output or 'null') .. '}'
  end
  if status == 'failed' then
    return '{"status":"failed","error":' .. (failure or 'null') .. '}'
  end
  return '{"status":"canceled","reason":' .. (reason and cjson.encode(reason) or 'null') .. '}'
end

-- Enqueue (now) each hook of a run that just ended; hook i gets id "<run id>-<i>".
local function fire_hooks(run_id, workflow, hooks_json, status, result, now)
  if not hooks_json then
    return
  end
  for index, hook in ipairs(cjson.decode(hooks_json)) do
    local hook_id = run_id .. '-' .. (index - 1)
    local wanted = status == 'failed' or not hook.on_failure_only
    if wanted and redis.call('EXISTS', run_key(hook_id)) == 0 then
      local input = '{"run_id":' .. cjson.encode(run_id) .. ',"workflow":'
        .. cjson.encode(workflow) .. ',"context":' .. hook.context
        .. ',"result":' .. result .. '}'
      local retry = hook.retry
      if retry == cjson.null then
        retry = nil
      end
      store_run({
        id = hook_id, workflow = hook.workflow, queue = hook.queue, input = input,
        available_at = now, retry = retry,
      }, now)
      redis.call('SADD', workflows_key(), hook.workflow)
      wake(hook.queue)
    end
  end
end

-- The queue index that holds a run in each non-terminal status.
local INDEX_OF_STATUS = { queued = 'ready', scheduled = 'scheduled', running = 'leases' }

-- End a run in a terminal status: set fields, leave its indexes, fire hooks.
-- run: the stored status, queue, workflow and hooks (HMGET in that order, as read
-- by the caller in the same script). fields: extra hash field/value pairs to store.
local function end_run(run_id, run, status, now, fields)
  local key = run_key(run_id)
  local current, queue, workflow, hooks = run[1], run[2], run[3], run[4]
  redis.call('HSET', key, 'status', status, 'finished_at', now, unpack(fields))
  if current == 'running' then
    redis.call('HDEL', key, 'lease_token')
  end
  redis.call('ZREM', queue_key(queue, INDEX_OF_STATUS[current]), run_id)
  redis.call('ZREM', workflow_cancelable_key(workflow), run_id)
  if hooks then
    local stored = redis.call('HMGET', key, 'output', 'error', 'cancel_reason')
    local result = hook_result(status, stored[1] or nil, stored[2] or nil, stored[3] or nil)
    fire_hooks(run_id, workflow, hooks, status, result, now)
  end
end

-- The fields end_run needs (status, queue, workflow, hooks), then those named after.
local function read_run(run_id, ...)
  return redis.call('HMGET', run_key(run_id), 'status', 'queue', 'workflow', 'hooks', ...)
end

local TERMINAL = { succeeded = true, failed = true, canceled = true }

-- Cancel one run as Backend.cancel describes; returns the CancelResult string.
local function cancel_one(run_id, reason, now)
  local key = run_key(run_id)
  local run = read_run(run_id, 'cancel_requested')
  local status = run[1]
  if not status then
    return 'not_found'
  end
  if TERMINAL[status] then
    return 'finished'
  end
  if run[5] == '1' then
    return 'requested'  -- already requested: the first reason given is kept
  end
  if reason then
    redis.call('HSET', key, 'cancel_reason', reason)
  end
  redis.call('HSET', key, 'cancel_requested', '1')
  if status == 'running' then
    -- A cancel-requested run is no longer selectable by cancel_many.
    redis.call('ZREM', workflow_cancelable_key(run[3]), run_id)
    return 'requested'
  end
  end_run(run_id, run, 'canceled', now, {})
  return 'canceled'
end
