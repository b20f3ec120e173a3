-- start_tick: start a cron tick's run unless its trigger's overlap policy skips it, in
-- one atomic step (Backend.start_tick).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the trigger's id within its workflow (non-empty)
-- ARGV[3]  scheduled_at: the tick's time (decimal string)
-- ARGV[4]  overlap: 'skip' | 'buffer_one' | 'allow_all'
-- ARGV[5]  how many skipped ticks to keep per trigger (a whole number, at least 1)
-- ARGV[6..] the run's RUN_FIELDS values (see library/enqueueing.lua)
--
-- The trigger's latest run is in the trigger runs hash (see trigger_name in keys.lua); a
-- skipped tick is pushed on the trigger's skipped ticks list, as JSON text with its
-- times as decimal strings, and the list is trimmed to ARGV[5] entries.
--
-- Returns { 'created', run id }, { 'found', the id of the run already holding the
-- tick's idempotency key } or { 'skipped', reason, the trigger's active run id }; or an
-- error reply, writing nothing, if a number is bad (arguments.lua).

local RUN = 6
local now = ARGV[1]
local refused = bad_now() or bad_new_run(RUN)
if not refused and not finite(ARGV[3]) then
  refused = refuse('run ' .. ARGV[RUN] .. ': ', "the tick's scheduled_at", ARGV[3])
end
if refused then return refused end

-- Why the policy skips this tick, given the trigger's latest run; nil: it does not.
local function skip_reason(overlap, latest)
  if overlap == 'allow_all' then return nil end
  local fields = redis.call('HMGET', run_key(latest), 'status', 'claims')
  local status = fields[1]
  if not status or status == 'succeeded' or status == 'failed' or status == 'canceled' then
    return nil  -- ended, or gone
  end
  if overlap == 'skip' then return 'previous_run_active' end
  local waiting = (status == 'queued' or status == 'scheduled') and (tonumber(fields[2]) or 0) == 0
  if waiting then return 'buffer_full' end
  return nil
end

local parsed = run_from_args(RUN)
local run = parsed[1]
if run.idempotency_key then
  local earlier = remembered(idempotency_key(run.workflow, run.idempotency_key), now)
  if earlier then return { 'found', earlier } end
end
local trigger = trigger_name(run.workflow, ARGV[2])
local latest = redis.call('HGET', trigger_runs_key(), trigger)
local reason = latest and skip_reason(ARGV[4], latest)
if reason then
  local record = cjson.encode({
    workflow = run.workflow, trigger = ARGV[2], scheduled_at = ARGV[3], reason = reason,
    run_id = latest, recorded_at = now,
  })
  local list = skipped_ticks_key(trigger)
  redis.call('LPUSH', list, record)
  redis.call('LTRIM', list, 0, tonumber(ARGV[5]) - 1)
  redis.call('ZADD', skipped_triggers_key(), now, trigger)
  return { 'skipped', reason, latest }
end
note_absent({ run.id })
local existing, to_wake = enqueue_one(parsed, now)
if existing then return { 'found', existing } end
if to_wake then
  wake(run.queue, run.workflow)
end
redis.call('HSET', trigger_runs_key(), trigger, run.id)
return { 'created', run.id }
