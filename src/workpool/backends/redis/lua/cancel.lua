-- cancel: cancel one run (Backend.cancel).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  run id
-- ARGV[3]  reason (optional; absent means none)
--
-- Returns 'canceled' (was queued or scheduled; hooks fired), 'requested' (running:
-- cancel_requested set for the lease holder to see), 'finished' (already terminal,
-- nothing changed) or 'not_found'.

return cancel_one(ARGV[2], ARGV[3], ARGV[1])
