-- send_event: store an event for a run, waking it if it waits on the event's key
-- (Backend.send_event).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  event key
-- ARGV[4]  the event's payload (JSON text)
--
-- Returns 'sent', 'not_found' or 'finished' (terminal: nothing stored). The payload goes
-- at the end of the run's list of the key; the key joins the run's set of keys, and the
-- run's hash notes that it has one (field inbox '1', so that purge looks for lists only
-- then). A suspended run whose awaited_events (its suspension's keys, a JSON array)
-- holds the key is queued now (resume_suspended). A bad now gets an error reply and
-- nothing is written.

local now, run_id, key, payload = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local refused = bad_now()
if refused then return refused end
local run = redis.call('HMGET', run_key(run_id), 'status', 'queue', 'workflow', 'gate',
  'gate_limit', 'rate', 'awaited_events', 'inbox')
if not run[1] then
  return 'not_found'
elseif TERMINAL[run[1]] then
  return 'finished'
end
redis.call('RPUSH', inbox_key(run_id, key), payload)
redis.call('SADD', inbox_keys_key(run_id), key)
if run[8] ~= '1' then
  redis.call('HSET', run_key(run_id), 'inbox', '1')
end
if run[1] == 'suspended' and run[7] and run[7] ~= '' then
  for _, awaited in ipairs(cjson.decode(run[7])) do
    if awaited == key then
      resume_suspended(run_id, run, now)
      break
    end
  end
end
return 'sent'
