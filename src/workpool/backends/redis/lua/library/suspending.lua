-- Library: suspending a run that waits on children or a timer (finish.lua).

-- Whether a suspending run may resume at once: its timer is due, or a child it
-- waits on has ended (or does not exist).
local function resumable(finish, now)
  if finish.wake_at and tonumber(finish.wake_at) <= tonumber(now) then return true end
  for _, child_id in ipairs(finish.waiting_on or {}) do
    local status = redis.call('HGET', run_key(child_id), 'status')
    if not status or TERMINAL[status] then
      return true
    end
  end
  return false
end

-- Suspend a running run (finish.lua; finish: its entry, run: as read_run returns it).
-- Its next claim resumes the attempt. It stays in its workflow's cancelable set; with a
-- timer it waits in 'scheduled' at wake_at, where claim promotes it when due. fields:
-- the run's own fields to store (its attempt_time among them).
local function suspend(finish, run, fields, now)
  local run_id, queue = finish.run_id, run[2]
  fields[#fields + 1], fields[#fields + 2] = 'resuming', '1'
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
