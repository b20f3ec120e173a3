-- finish: end attempts reported by their lease holders (Backend.finish).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  JSON array of finishes, each an object with run_id, token, status
--          ('succeeded' | 'failed' | 'canceled' | 'retry' | 'suspend' | 'attention') and
--          optionally output
--          and error (JSON texts), retry_at and wake_at (seconds, decimal strings),
--          waiting_on (array of child run ids), progress (JSON text)
--
-- Returns 1 (applied) or 0 (lease not held) per entry, in order; a bad time: an error reply.
-- A run whose record is corrupt (the fields FINISH_FIELDS names, checks.lua) is set aside: 0.
-- A cancel request turns failed, canceled, retry, attention and suspend into canceled. Limited
-- queues the runs left are woken if they have room (queues.lua).

local now = ARGV[1]

-- run: as read_run returns it; fields: the run's own, to store. A later retry wakes its
-- pair too (for the next wake-up).
local function retry(run_id, run, retry_at, fields)
  drop_lease(run_id, run, fields)
  if make_waiting(run_id, run, retry_at or now, now, run[8], run[9], run[13]) then
    wake(run[2], run[3])
  end
  count('retried', run[2], run[3], now)
end

-- An applied finish but a suspend (even one a cancel request ends) is a timed attempt.
local function timed(run, ran)
  count('timed', run[2], run[3], now)
  count('run_time', run[2], run[3], now, ran)
end

-- The output or error a finish stores (as hash field/value pairs), by its status.
local function outcome_fields(finish)
  local status = finish.status
  if status == 'succeeded' and finish.output then
    return { 'output', finish.output }
  elseif finish.error and status ~= 'canceled' and status ~= 'succeeded' then
    return { 'error', finish.error }
  end
  return {}
end

-- What finish reads (as read_run_checked: run[11..17], then batch; deadline and gate_list
-- last), then what it only checks: attempts and lease_losses (the counts a retried run's
-- next claim and reap do arithmetic on) and rank_offset (a retry ranks the run with it). Not checked here:
-- created_at, available_at, claims, timeout, priority, finished_at, awaited_events.
local FINISH_FIELDS = { 'status', 'queue', 'workflow', 'hooks', 'parent_run_id',
  'parent_step', 'has_steps', 'gate', 'gate_limit', 'admitted', 'lease_token',
  'cancel_requested', 'rate', 'started_at', 'isolate', 'run_time', 'attempt_time', 'batch',
  'attempts', 'lease_losses', 'rank_offset', 'deadline', 'gate_list' }

local function apply(finish)
  local run = read_run_checked(finish.run_id, FINISH_FIELDS)
  if set_aside_if_corrupt(finish.run_id, run) or run[1] ~= 'running'
      or run[11] ~= finish.token then
    return 0
  end
  if run[15] then redis.call('HDEL', run_key(finish.run_id), 'isolate') end  -- it survived
  -- The run's own fields go with its next status write: no HINCRBYFLOAT of its run time.
  local ran = tonumber(now) - tonumber(run[14])
  local fields = { 'run_time', decimal((tonumber(run[16]) or 0) + ran) }
  if finish.progress then fields[3], fields[4] = 'progress', finish.progress end
  local status = finish.status
  if run[12] == '1' and status ~= 'succeeded' then
    status = 'canceled'  -- with the entry's error, if any, as the last failure
  end
  if status == 'suspend' or status == 'attention' then
    fields[#fields + 1] = 'attempt_time'
    fields[#fields + 1] = decimal((tonumber(run[17]) or 0) + ran)
  end
  if status == 'suspend' then
    suspend(finish, run, fields, now)
    return 1
  elseif status == 'attention' then
    timed(run, ran)
    stop(finish, run, fields)
    return 1
  end
  for _, value in ipairs(outcome_fields(finish)) do fields[#fields + 1] = value end
  if finish.status ~= 'suspend' then timed(run, ran) end
  if status == 'retry' then
    retry(finish.run_id, run, finish.retry_at, fields)
  else
    end_run(finish.run_id, run, status, now, fields)
  end
  return 1
end

local finishes = cjson.decode(ARGV[2])
local results, refused = {}, bad_finishes(finishes)
if refused then return refused end
for _, finish in ipairs(finishes) do results[#results + 1] = apply(finish) end
wake_left_queues()
return results
