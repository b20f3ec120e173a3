-- send_event: store an event for a run, waking it if it waits on the event's key
-- (Backend.send_event).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  event key
-- ARGV[4]  the event's payload (JSON text)
-- ARGV[5]  the event's id ('' for none)
-- ARGV[6]  the sender's trace context ('' for none), stored if the event wakes the run
--
-- Returns 'sent', 'not_found', 'duplicate' (the run was sent an event of this id before,
-- finished or not: nothing stored) or 'finished' (terminal: nothing stored). An id is
-- added to the run's set of event ids. The payload goes at the end of the run's list of
-- the key; the key joins the run's set of keys, and the run's hash notes that it has one
-- (field inbox '1', so that purge looks for lists only then). A suspended run whose awaited_events (its suspension's keys, a JSON array)
-- holds the key is queued now (resume_suspended). A bad now gets an error reply and
-- nothing is written; a run whose record is corrupt, an error reply 'CORRUPT ...' (it
-- is set aside: checks.lua).

local now, run_id, key, payload, event_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local trace = ARGV[6]

local refused = bad_now()
if refused then return refused end
local problem = problem_of(run_id)
if problem == GONE then
  return 'not_found'
elseif problem then
  return corrupt_reply(run_id, problem)
end
local run = redis.call('HMGET', run_key(run_id), 'status', 'queue', 'workflow', 'gate',
  'gate_limit', 'rate', 'awaited_events', 'inbox')
if event_id ~= '' and redis.call('SISMEMBER', event_ids_key(run_id), event_id) == 1 then
  return 'duplicate'
elseif TERMINAL[run[1]] then
  return 'finished'
end
if event_id ~= '' then
  redis.call('SADD', event_ids_key(run_id), event_id)
end
redis.call('RPUSH', inbox_key(run_id, key), payload)
redis.call('SADD', inbox_keys_key(run_id), key)
if run[8] ~= '1' then
  redis.call('HSET', run_key(run_id), 'inbox', '1')
end
if run[1] == 'suspended' and run[7] and run[7] ~= '' then
  for _, awaited in ipairs(cjson.decode(run[7])) do
    if awaited == key then
      if trace ~= '' then  -- its next claim names the sender (field woken_by)
        local claims = tonumber(redis.call('HGET', run_key(run_id), 'claims') or '0')
        redis.call('HSET', run_key(run_id), 'woken_by', (claims + 1) .. ' ' .. trace)
      end
      resume_suspended(run_id, run, now)
      break
    end
  end
end
return 'sent'
