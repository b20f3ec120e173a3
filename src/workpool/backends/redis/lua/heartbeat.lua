-- heartbeat: store or remove a worker's record, and delete the expired ones
-- (Backend.heartbeat, Backend.remove_worker).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the worker's id
-- ARGV[3]  when its record expires (decimal string; ignored when removing)
-- ARGV[4]  the record's JSON text, or '' to remove the worker's record
-- ARGV[5..] the names of the workflows the worker defines (none when removing)
--
-- Returns those names that have no registry record, sorted: the store lost them (a
-- restart without persistence, a FLUSHALL) and the worker restores them
-- (restore_registry.lua). One HEXISTS per name: no registry record is read or written.

local now, worker_id, expires_at, record = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local expired = redis.call('ZRANGEBYSCORE', workers_expiry_key(), '-inf', now)
for _, id in ipairs(expired) do
  redis.call('HDEL', workers_key(), id)
  redis.call('ZREM', workers_expiry_key(), id)
end
if record == '' then
  redis.call('HDEL', workers_key(), worker_id)
  redis.call('ZREM', workers_expiry_key(), worker_id)
else
  redis.call('HSET', workers_key(), worker_id, record)
  redis.call('ZADD', workers_expiry_key(), expires_at, worker_id)
end
local missing = {}
for i = 5, #ARGV do
  if redis.call('HEXISTS', registry_key(), ARGV[i]) == 0 then
    missing[#missing + 1] = ARGV[i]
  end
end
table.sort(missing)
return missing
