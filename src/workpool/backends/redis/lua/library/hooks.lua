-- Library: completion hooks, enqueued when the run that owns them ends.

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
      local run = {
        id = hook_id, workflow = hook.workflow, queue = hook.queue, input = input,
        available_at = now, retry = retry, priority = hook.priority,
        rank_offset = hook.rank_offset,
      }
      if hook.max_concurrency and hook.max_concurrency ~= cjson.null then
        run.gate, run.gate_limit = gate_id(hook.workflow, ''), hook.max_concurrency
      end
      if store_run(run, now) then
        wake(hook.queue, hook.workflow)
      end
    end
  end
end
