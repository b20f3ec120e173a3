-- take_event: store an event step of a leased run, with the oldest event of its key if
-- one was sent (Backend.take_event).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  lease token
-- ARGV[4]  step name
-- ARGV[5]  step JSON text, as stored (see keys.py): waiting, or succeeded (timed out)
-- ARGV[6]  event key
--
-- Returns the step JSON text as stored, or nil if the lease is not held (nothing
-- changed). A step already stored succeeded is returned as it is, and no event is taken.
-- Without an event the text is stored verbatim; with one, it is decoded and stored
-- succeeded with the event's payload as output and finished_at now. A bad now gets an
-- error reply and nothing is written.

local now, run_id, token, name, step_json, key = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5],
  ARGV[6]

local refused = bad_now()
if refused then return refused end
if not lease_held(run_id, token) then
  return nil
end
local has_steps = redis.call('HGET', run_key(run_id), 'has_steps')
local stored = redis.call('HGET', steps_key(run_id), name)
if stored and cjson.decode(stored).status == 'succeeded' then
  return stored
end
local payload = redis.call('LPOP', inbox_key(run_id, key))
if payload then
  local step = cjson.decode(step_json)
  step.status, step.output, step.finished_at = 'succeeded', payload, now
  step_json = cjson.encode(step)
end
store_step(run_id, name, step_json, has_steps)
return step_json
