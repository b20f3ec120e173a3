-- act_on_run: pause, resume or run now one run (Backend.act_on_run). Everything is read
-- and checked before the first write.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the run's id
-- ARGV[3]  the action: 'pause', 'resume' or 'run_now'
--
-- Returns the run's status before ('' for no such run); the run changed only if the
-- action applies to it (ACTS_ON below). An error reply 'CORRUPT ...' for a run whose
-- record is corrupt (set aside: checks.lua).
--
-- pause: out of its queue index (ready set, gate's waiting set or 'scheduled'); a gate
-- place it held is freed (the gate admits its next run); its rate reservation dropped.
-- It stays in its deadlines set (a claim ends it when due) and its cancelable sets.
-- resume: waiting again at its kept available_at (make_waiting: queued through its rate
-- limits and gate, or scheduled). run_now: a scheduled run waiting at now (promoted as
-- claim promotes it, its rate reservation used).

local ACTS_ON = { pause = { queued = true, scheduled = true }, resume = { paused = true },
  run_now = { scheduled = true } }

local now, run_id, action = ARGV[1], ARGV[2], ARGV[3]
local run = read_run(run_id, 'available_at', 'rate', 'rate_reserved')
if set_aside_if_corrupt(run_id, run) then
  if run.problem == GONE then return '' end
  return corrupt_reply(run_id, run.problem)
end
local status, queue, workflow, gate, limit = run[1], run[2], run[3], run[8], run[9]
if not ACTS_ON[action] or not ACTS_ON[action][status] then
  return status
end
local key = run_key(run_id)

if action == 'pause' then
  if status == 'scheduled' then
    zrem_later(queue_key(queue, 'scheduled'), run_id)
    redis.call('HDEL', key, 'rate_reserved')
  elseif gate and run[10] ~= '1' then
    redis.call('ZREM', gate_waiting_key(gate), run_id)
  else
    unready(run_id, queue, workflow)
  end
  set_status(run_id, queue, workflow, status, 'paused')
  if gate and run[10] == '1' then
    redis.call('HDEL', key, 'admitted')
    leave_gate(gate, limit, run.gate_list)
  end
  return status
end

local available_at, rate = run[11], run[12]
if action == 'run_now' then
  zrem_later(queue_key(queue, 'scheduled'), run_id)
  available_at = now
  if run[13] == '1' then
    redis.call('HDEL', key, 'rate_reserved')  -- used now
    rate = nil
  end
end
make_waiting(run_id, run, available_at, now, gate, limit, rate)
wake(queue, workflow)  -- even if it waits: its workers learn when it is due
return status
