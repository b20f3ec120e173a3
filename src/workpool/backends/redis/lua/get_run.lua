-- get_run: a run's hash, and what is wrong with it if a script set it aside as corrupt
-- (Backend.get_run). Reads only.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  run id
--
-- Returns { problem or nil, the run's hash (HGETALL; empty when it has none, or when its
-- key is not a hash) }.

local fields = redis.pcall('HGETALL', run_key(ARGV[1]))
if fields.err then fields = {} end
return { redis.call('HGET', corrupt_key(), ARGV[1]), fields }
