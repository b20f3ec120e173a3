-- cancel_batch: cancel up to a limit of a batch's unfinished runs (Backend.cancel_batch).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the batch id
-- ARGV[3]  limit (integer)
-- ARGV[4]  reason (optional; absent means none)
--
-- Returns how many runs were canceled or cancel-requested (awaited children canceled
-- with a run included), or -1 if there is no such batch. Selects from the batch's
-- cancelable set (unfinished runs without a cancel request, by id): each run it reads
-- leaves it, by its cancel or here, so callers that repeat until 0 end.

local now, batch_id, limit, reason = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
if redis.call('EXISTS', batches().key(batch_id)) == 0 then
  return -1
end
if limit <= 0 then
  return 0
end
local key = batches().cancelable_key(batch_id)
flush_key(key)
local done = 0
for _, run_id in ipairs(redis.call('ZRANGE', key, 0, limit - 1)) do
  -- A run canceled with its parent earlier in this call counts 0, and is out already.
  local _, changed = cancel_one(run_id, reason, now)
  if changed == 0 then
    zrem_later(key, run_id)
  end
  done = done + changed
end
return done
