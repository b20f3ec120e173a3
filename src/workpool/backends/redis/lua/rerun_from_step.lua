-- rerun_from_step: execute a needs_attention run again from one of its saved steps
-- (Backend.rerun_from_step). Everything is read and checked before the first write.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the run's id
-- ARGV[3]  the step's name
-- ARGV[4]  the JSON text stored as the run's rerun_from ({"step", "reason", "at"})
--
-- Returns 'queued', 'not_found', 'not_stopped' or 'no_step' (nothing changed but in
-- 'queued'); an error reply 'CORRUPT ...' for a run whose record is corrupt. The step
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
  'gate_limit', 'rate')
if run[1] ~= 'needs_attention' then
  return 'not_stopped'
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
redis.call('HSET', run_key(run_id), 'rerun_from', note)
resume_suspended(run_id, run, now)
return 'queued'
