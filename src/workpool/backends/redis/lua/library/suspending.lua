-- Library: suspending a run that waits on children, events or a timer (finish.lua), and
-- queueing a suspended run again when what it waits for comes.

-- Whether a suspending run may resume at once: its timer is due, a child it waits on
-- has ended (or does not exist), or an event of a key it waits on was sent already.
local function resumable(finish, now)
  if finish.wake_at and tonumber(finish.wake_at) <= tonumber(now) then return true end
  for _, child_id in ipairs(finish.waiting_on or {}) do
    local status = redis.pcall('HGET', run_key(child_id), 'status')  -- not a hash: a table
    if not status or TERMINAL[status] then
      return true
    end
  end
  if finish.events then
    local lists = {}
    for i, key in ipairs(finish.events) do lists[i] = inbox_key(finish.run_id, key) end
    return redis.call('EXISTS', unpack(lists)) > 0
  end
  return false
end

-- Suspend a running run (finish.lua; finish: its entry, run: as read_run returns it).
-- Its next claim resumes the attempt. It stays in its workflow's cancelable set; with a
-- timer it waits in 'scheduled' at wake_at, where claim promotes it when due. fields:
-- the run's own fields to store (its attempt_time among them). The event keys it waits
-- on are written by every suspension ('' for none), in the same HSET, so send_event never
-- reads those of an earlier one.
local function suspend(finish, run, fields, now)
  local run_id, queue = finish.run_id, run[2]
  fields[#fields + 1], fields[#fields + 2] = 'resuming', '1'
  fields[#fields + 1] = 'awaited_events'
  fields[#fields + 1] = finish.events and cjson.encode(finish.events) or ''
  drop_lease(run_id, run, fields)
  if resumable(finish, now) then
    if make_waiting(run_id, run, now, now, run[8], run[9], run[13]) then
      wake(queue, run[3])
    end
  elseif finish.wake_at then
    set_status(run_id, queue, run[3], 'running', 'suspended', 'available_at', finish.wake_at)
    zadd_later(queue_key(queue, 'scheduled'), finish.wake_at, run_id)
  else
    set_status(run_id, queue, run[3], 'running', 'suspended')
  end
end

-- Stop a running run in needs_attention (finish.lua): its lease and gate place dropped,
-- the error saying why stored, in no queue index until rerun_from_step queues it (the
-- attempt goes on) or a cancel ends it; it stays in its workflow's cancelable set.
local function stop(finish, run, fields)
  fields[#fields + 1], fields[#fields + 2] = 'resuming', '1'
  fields[#fields + 1], fields[#fields + 2] = 'awaited_events', ''
  fields[#fields + 1], fields[#fields + 2] = 'error', finish.error or ''
  drop_lease(finish.run_id, run, fields)
  set_status(finish.run_id, run[2], run[3], 'running', 'needs_attention')
end

-- Queue a suspended run again now (an awaited child ended, an awaited event was sent):
-- out of 'scheduled' (its timer, if any), then through its rate limits and gate
-- (make_waiting), waking its pair. run: its status, queue, workflow, gate, gate_limit
-- and rate fields.
local function resume_suspended(run_id, run, now)
  zrem_later(queue_key(run[2], 'scheduled'), run_id)
  if make_waiting(run_id, run, now, now, run[4], run[5], run[6]) then
    wake(run[2], run[3])
  end
end
