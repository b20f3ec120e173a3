-- Library: completion hooks, enqueued when the run that owns them ends (and batch
-- callbacks, stored alike: batches.lua).

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

-- Enqueue (now) the run of a hook (a decoded item of a run's hooks, or a batch's
-- callback) with this id and input (JSON text), unless a run of that id exists.
local function store_hook_run(hook_id, hook, input, now)
  if redis.call('EXISTS', run_key(hook_id)) == 1 then
    return
  end
  local retry = hook.retry
  if retry == cjson.null then
    retry = nil
  end
  local run = {
    id = hook_id, workflow = hook.workflow, queue = hook.queue, input = input,
    available_at = now, retry = retry, priority = hook.priority,
    rank_offset = hook.rank_offset, trace = hook.trace,
  }
  if hook.max_concurrency and hook.max_concurrency ~= cjson.null then
    run.gate, run.gate_limit = gate_id(hook.workflow, ''), hook.max_concurrency
  end
  if store_run(run, now) then
    wake(hook.queue, hook.workflow)
  end
end

-- Enqueue (now) each hook of a run that just ended; hook i gets id "<run id>-<i>", and
-- "<run id>-<i>-<n>" once the run was rerun from a step n times (rerun_from_step.lua).
local function fire_hooks(run_id, workflow, hooks_json, status, result, now)
  if not hooks_json then
    return
  end
  local rerun = redis.call('HGET', run_key(run_id), 'rerun_from')
  local suffix = rerun and '-' .. cjson.decode(rerun).count or ''
  for index, hook in ipairs(cjson.decode(hooks_json)) do
    if status == 'failed' or not hook.on_failure_only then
      local input = '{"run_id":' .. cjson.encode(run_id) .. ',"workflow":'
        .. cjson.encode(workflow) .. ',"context":' .. hook.context
        .. ',"result":' .. result .. '}'
      store_hook_run(run_id .. '-' .. (index - 1) .. suffix, hook, input, now)
    end
  end
end
