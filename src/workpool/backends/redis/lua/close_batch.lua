-- close_batch: close a batch, completing it at once if none of its runs is unfinished
-- (Backend.close_batch; see library/batches.lua).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the batch id
--
-- Returns the batch's hash as now stored (HGETALL), or nil if there is no such batch.
-- Closing a closed batch changes nothing.

local now, batch_id = ARGV[1], ARGV[2]
local b = batches()
local key = b.key(batch_id)
local batch = redis.call('HMGET', key, unpack(b.FIELDS))
if not batch[1] then
  return nil
end
if batch[5] == '1' then
  batch[5] = '0'
  redis.call('HSET', key, 'open', '0')
  b.complete_if_done(batch_id, batch, now)
end
return redis.call('HGETALL', key)
