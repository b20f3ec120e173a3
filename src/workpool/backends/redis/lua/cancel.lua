-- cancel: cancel one run (Backend.cancel).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  the caller's trace context ('' for none), kept for a running run's renewals
-- ARGV[4]  reason (optional; absent means none)
--
-- Returns 'canceled' (was queued, scheduled or suspended; hooks fired; awaited children
-- canceled too), 'requested' (running: cancel_requested set for the lease holder to
-- see, and canceled_by if a trace context is given), 'finished' (already terminal,
-- nothing changed) or 'not_found'; an error reply 'CORRUPT ...' for a run whose record
-- is corrupt (set aside: checks.lua).

local trace = ARGV[3] ~= '' and ARGV[3] or nil
local result, _, problem = cancel_one(ARGV[2], ARGV[4], ARGV[1], trace)
if result == 'corrupt' then return corrupt_reply(ARGV[2], problem) end
return result
