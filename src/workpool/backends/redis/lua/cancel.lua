-- cancel: cancel one run (Backend.cancel).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  reason (optional; absent means none)
--
-- Returns 'canceled' (was queued, scheduled or suspended; hooks fired; awaited children
-- canceled too), 'requested' (running: cancel_requested set for the lease holder to
-- see), 'finished' (already terminal, nothing changed) or 'not_found'; an error reply
-- 'CORRUPT ...' for a run whose record is corrupt (set aside: checks.lua).

local result, _, problem = cancel_one(ARGV[2], ARGV[3], ARGV[1])
if result == 'corrupt' then return corrupt_reply(ARGV[2], problem) end
return result
