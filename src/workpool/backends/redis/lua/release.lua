-- release: hand leases back on graceful shutdown (Backend.release).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  '1' if the attempts are used (handlers over their time limit), else '0'
-- ARGV[3..] pairs: run id, lease token
--
-- Each held run becomes queued now (attempts unchanged, no lease loss counted), or
-- ends canceled if its cancel was requested. A hand-back is not an attempt: the run
-- is marked resuming, so its next claim takes the same attempt again, unless the
-- attempt is used. A run whose record is corrupt is set aside (checks.lua).
-- Returns the number of runs released.
-- Each limited queue the runs left is woken if it has room and claimable runs
-- (queues.lua).

local now, used = ARGV[1], ARGV[2] == '1'
local released = 0
for i = 3, #ARGV, 2 do
  local run_id, token = ARGV[i], ARGV[i + 1]
  local run = read_run(run_id, 'lease_token', 'cancel_requested', 'rate')
  if not set_aside_if_corrupt(run_id, run) and run[1] == 'running' and run[11] == token then
    if run[12] == '1' then
      end_run(run_id, run, 'canceled', now, {})
    else
      drop_lease(run_id, run, used and {} or { 'resuming', '1' })
      if make_waiting(run_id, run, now, now, run[8], run[9], run[13]) then
        wake(run[2], run[3])
      end
    end
    released = released + 1
  end
end
wake_left_queues()
return released
