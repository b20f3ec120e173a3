-- cancel: cancel one run (Backend.cancel).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  reason (optional; absent means none)
--
-- Returns 'canceled' (was queued, scheduled or suspended; hooks fired; awaited children
-- canceled too), 'requested' (running: cancel_requested set for the lease holder to
-- see), 'finished' (already terminal, nothing changed) or 'not_found'.

local result = cancel_one(ARGV[2], ARGV[3], ARGV[1])
return result
