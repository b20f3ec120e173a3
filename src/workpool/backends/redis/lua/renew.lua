-- renew: extend held leases (Backend.renew).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  new lease expiry: now + lease seconds (decimal string, seconds since epoch)
-- ARGV[2..] triples: run id, lease token, progress (JSON text to store, or '' to keep)
--
-- Returns { lost run ids, run ids whose lease is held and whose cancel was requested },
-- and a third list, { run id, its canceled_by, ... }, only if one of those has a
-- canceller's trace context (the reply is unchanged for runs without a cancel request).
-- A lease is held while the run is running with the same token, even once expired; a
-- run whose record is corrupt is set aside (checks.lua) and its lease lost.

local lease_expires_at = ARGV[1]
local lost, cancel_requested, canceled_by = {}, {}, {}
for i = 2, #ARGV, 3 do
  local run_id, token, progress = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local problem, run = problem_of(run_id)
  if not problem and run.status == 'running' and run.lease_token == token then
    zadd_later(queue_key(run.queue, 'leases'), lease_expires_at, run_id)
    if progress ~= '' then redis.call('HSET', run_key(run_id), 'progress', progress) end
    if run.cancel_requested == '1' then
      cancel_requested[#cancel_requested + 1] = run_id
      local by = redis.call('HGET', run_key(run_id), 'canceled_by')
      if by then
        canceled_by[#canceled_by + 1], canceled_by[#canceled_by + 2] = run_id, by
      end
    end
  else
    lost[#lost + 1] = run_id
  end
end
if #canceled_by > 0 then return { lost, cancel_requested, canceled_by } end
return { lost, cancel_requested }
