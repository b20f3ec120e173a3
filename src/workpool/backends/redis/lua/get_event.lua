-- get_event: a run's status and the value it published under a key, read together
-- (Backend.get_event).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  run id
-- ARGV[2]  key
--
-- Returns { status, value } (value nil when none was published), or nil for an unknown
-- run.

local status = redis.pcall('HGET', run_key(ARGV[1]), 'status')
if type(status) == 'table' then
  return redis.error_reply('CORRUPT run ' .. ARGV[1] .. ': its key is not a hash')
end
if not status then
  return nil
end
return { status, redis.call('HGET', published_key(ARGV[1]), ARGV[2]) }
