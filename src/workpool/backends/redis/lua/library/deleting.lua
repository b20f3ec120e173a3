-- Library: deleting a terminal run (purge.lua, act_on_runs.lua).

-- Delete run run_id with its steps, its children list, its published values, its events
-- not taken (their lists, when its hash notes it has some, and its set of their keys),
-- its idempotency key if that still names it, its list entry and its finished entry
-- (terminal runs are in no other index), and take it out of its failure group. Runs it
-- started and the run that started it are left alone. Returns whether it had a record.
local function delete_run(run_id)
  local run = redis.pcall('HMGET', run_key(run_id), 'status', 'queue', 'workflow',
    'idempotency_key', 'inbox', 'error')
  if run.err then run = {} end  -- not a hash: its keys are deleted all the same
  if run[1] and run[2] and run[3] then
    zrem_later(list_key(run[1], pair_of(run[2], run[3])), run_id)
    if run[4] then
      local key = idempotency_key(run[3], run[4])
      local value = redis.call('GET', key)
      if value and string.sub(value, string.find(value, ' ', 1, true) + 1) == run_id then
        redis.call('DEL', key)
      end
    end
    if run[5] then
      for _, key in ipairs(redis.call('SMEMBERS', inbox_keys_key(run_id))) do
        redis.call('DEL', inbox_key(run_id, key))
      end
      redis.call('DEL', event_ids_key(run_id))
    end
    if run[1] == 'failed' then
      uncount_failure(run_id, run[3], run[6] or nil)
    end
  end
  redis.call('DEL', run_key(run_id), steps_key(run_id), children_key(run_id),
    published_key(run_id), inbox_keys_key(run_id))
  zrem_later(finished_key(), run_id)
  return run[1] ~= nil
end
