-- finish: end attempts reported by their lease holders (Backend.finish).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  JSON array of finishes, each an object with run_id, token, status
--          ('succeeded' | 'failed' | 'canceled' | 'retry' | 'suspend') and optionally output
--          and error (JSON texts), retry_at and wake_at (seconds, decimal strings),
--          waiting_on (array of child run ids), progress (JSON text)
--
-- Returns 1 (applied) or 0 (lease not held) per entry, in order; a bad time: an error reply.
-- A cancel request turns failed, canceled, retry and suspend into canceled. Limited
-- queues the runs left are woken if they have room (queues.lua).

local now = ARGV[1]

-- run: as read_run returns it. A later retry wakes its pair too (for the next wake-up).
local function retry(run_id, run, retry_at)
  drop_lease(run_id, run)
  if make_waiting(run_id, run, retry_at or now, now, run[8], run[9], run[13]) then
    wake(run[2], run[3])
  end
  count('retried', run[2], run[3], now)
end

-- Whether a suspending run may resume at once: its timer is due, or a child it
-- waits on has ended (or does not exist).
local function resumable(finish)
  if finish.wake_at and tonumber(finish.wake_at) <= tonumber(now) then return true end
  for _, child_id in ipairs(finish.waiting_on or {}) do
    local status = redis.call('HGET', run_key(child_id), 'status')
    if not status or TERMINAL[status] then
      return true
    end
  end
  return false
end

-- Its next claim resumes the attempt. It stays in its workflow's cancelable set; with a
-- timer it waits in 'scheduled' at wake_at, where claim promotes it when due.
local function suspend(finish, run)
  local run_id, queue = finish.run_id, run[2]
  drop_lease(run_id, run)
  redis.call('HSET', run_key(run_id), 'resuming', '1')
  redis.call('HINCRBYFLOAT', run_key(run_id), 'attempt_time', tonumber(now) - tonumber(run[14]))
  if resumable(finish) then
    if make_waiting(run_id, run, now, now, run[8], run[9], run[13]) then
      wake(queue, run[3])
    end
  elseif finish.wake_at then
    set_status(run_id, queue, run[3], 'running', 'suspended', 'available_at', finish.wake_at)
    redis.call('ZADD', queue_key(queue, 'scheduled'), finish.wake_at, run_id)
  else
    set_status(run_id, queue, run[3], 'running', 'suspended')
  end
end

-- An applied finish but a suspend (even one a cancel request ends) is a timed attempt.
local function timed(run)
  count('timed', run[2], run[3], now)
  count('run_time', run[2], run[3], now, tonumber(now) - tonumber(run[14]))
end

local function apply(finish)
  local run = read_run(finish.run_id, 'lease_token', 'cancel_requested', 'rate', 'started_at',
    'isolate')
  if run[1] ~= 'running' or run[11] ~= finish.token then
    return 0
  end
  if run[15] then redis.call('HDEL', run_key(finish.run_id), 'isolate') end  -- it survived
  if finish.progress then redis.call('HSET', run_key(finish.run_id), 'progress', finish.progress) end
  redis.call('HINCRBYFLOAT', run_key(finish.run_id), 'run_time', tonumber(now) - tonumber(run[14]))
  local status, fields = finish.status, {}
  if status == 'succeeded' and finish.output then
    fields = { 'output', finish.output }
  elseif finish.error and status ~= 'canceled' and status ~= 'succeeded' then
    fields = { 'error', finish.error }
  end
  if run[12] == '1' and status ~= 'succeeded' then
    status = 'canceled'  -- with the entry's error, if any, as the last failure
  end
  if status == 'suspend' then
    suspend(finish, run)
    return 1
  end
  if finish.status ~= 'suspend' then timed(run) end
  if status == 'retry' then
    if fields[1] then redis.call('HSET', run_key(finish.run_id), unpack(fields)) end
    retry(finish.run_id, run, finish.retry_at)
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
