-- rerun_from_step: execute a needs_attention, failed or canceled run again from one of
-- its saved steps (Backend.rerun_from_step). Everything is read and checked before the
-- first write.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the run's id
-- ARGV[3]  the step's name
-- ARGV[4]  the JSON object {"step", "reason", "at"}: stored as the run's rerun_from with
--          "count" (the earlier one's plus one) appended to its text, so "at" keeps
--          every digit (cjson would round it)
--
-- Returns 'queued', 'not_found', 'not_stopped', 'succeeded', 'linked' or 'no_step'
-- (nothing changed but in 'queued'); an error reply 'CORRUPT ...' for a run whose record
-- is corrupt. A finished run (failed or canceled) first leaves the finished set and its
-- failure group, rejoins its workflow's cancelable set (and its queue's deadlines) and
-- gets a fresh attempt, its ending's fields cleared. The step
-- and every later one are deleted from the steps hash: a position at least the step's,
-- or, where either has no position, a started_at at least its (steps are JSON objects,
-- codec/steps.py). The run is then queued as a woken suspended run is (suspending.lua).

local now, run_id, name, note = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local problem = problem_of(run_id)
if problem == GONE then
  return 'not_found'
elseif problem then
  return corrupt_reply(run_id, problem)
end
local run = redis.call('HMGET', run_key(run_id), 'status', 'queue', 'workflow', 'gate',
  'gate_limit', 'rate', 'parent_step', 'batch', 'retried_as', 'rerun_from', 'error',
  'created_at', 'deadline')
local status = run[1]
if status == 'succeeded' then
  return 'succeeded'
elseif status ~= 'needs_attention' and status ~= 'failed' and status ~= 'canceled' then
  return 'not_stopped'
elseif status ~= 'needs_attention' and (run[7] or run[8] or run[9]) then
  return 'linked'
end
local steps = steps_key(run_id)
local chosen = redis.call('HGET', steps, name)
if not chosen then
  return 'no_step'
end
chosen = cjson.decode(chosen)
local from_position, from_start = chosen.position, tonumber(chosen.started_at)
local stored = redis.call('HGETALL', steps)
local forgotten = {}
for i = 1, #stored, 2 do
  local step = cjson.decode(stored[i + 1])
  local later
  if step.position == nil or from_position == nil then
    later = tonumber(step.started_at) >= from_start
  else
    later = step.position >= from_position
  end
  if later then forgotten[#forgotten + 1] = stored[i] end
end
redis.call('HDEL', steps, unpack(forgotten))
local count = 1 + (run[10] and cjson.decode(run[10]).count or 0)
note = string.sub(note, 1, -2) .. ',"count":' .. count .. '}'
local key = run_key(run_id)
redis.call('HSET', key, 'rerun_from', note)
if status ~= 'needs_attention' then
  if status == 'failed' then uncount_failure(run_id, run[3], run[11] or nil) end
  zrem_later(finished_key(), run_id)
  zadd_later(workflow_cancelable_key(run[3]), run[12], run_id)
  if run[13] then zadd_later(queue_key(run[2], 'deadlines'), run[13], run_id) end
  redis.call('HSET', key, 'attempts', '0', 'cancel_requested', '0')
  redis.call('HDEL', key, 'finished_at', 'error', 'output', 'cancel_reason', 'resuming',
    'attempt_time')
end
resume_suspended(run_id, run, now)
return 'queued'
