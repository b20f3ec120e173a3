-- Library: re-running a failed or canceled run as a new, linked run (rerun.lua,
-- act_on_runs.lua).

-- Re-run run_id as new_id at now. Returns 'created', 'exists' and the id of the run an
-- earlier rerun made, 'not_found', 'not_finished' (active), 'succeeded', 'taken' when
-- new_id already names a run (nothing changed but in 'created'), or 'corrupt' and its
-- problem for a run whose record is corrupt (set aside: checks.lua).
-- The new run copies workflow, queue, input, retry, hooks, gates (gate_list too), rate,
-- timeout, priority and rank_offset, has retry_of, and is stored as enqueue stores a run
-- available now: it reserves a start if rate limited, goes through its gate if gated,
-- and wakes its queue.
local function rerun_one(run_id, new_id, now)
  local problem, checked = problem_of(run_id)
  if problem == GONE then
    return 'not_found'
  elseif problem then
    return 'corrupt', problem
  end
  local old = redis.call('HMGET', run_key(run_id), 'status', 'retried_as', 'workflow',
    'queue', 'input', 'retry', 'hooks', 'gate', 'gate_limit', 'rate', 'timeout', 'priority',
    'rank_offset', 'gate_list')
  if not old[1] then
    return 'not_found'
  elseif old[2] then
    return 'exists', old[2]
  elseif not TERMINAL[old[1]] then
    return 'not_finished'
  elseif old[1] == 'succeeded' then
    return 'succeeded'
  elseif not old[5] then
    set_aside(run_id, "field 'input' is missing", checked)
    return 'corrupt', "field 'input' is missing"
  elseif redis.call('EXISTS', run_key(new_id)) == 1 then
    return 'taken'
  end
  local run = {
    id = new_id, workflow = old[3], queue = old[4], input = old[5], available_at = now,
    retry = old[6] or nil, hooks = old[7] or nil, gate = old[8] or nil,
    gate_limit = old[9] or nil, rate = old[10] or nil, retry_of = run_id, timeout = old[11],
    priority = old[12] or nil, rank_offset = old[13] or nil, gate_list = old[14] or nil,
  }
  if store_run(run, now) then
    wake(run.queue, run.workflow)
  end
  redis.call('HSET', run_key(run_id), 'retried_as', new_id)
  return 'created', new_id
end
