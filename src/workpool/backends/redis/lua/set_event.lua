-- set_event: publish a value of a leased run under a key (Backend.set_event).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  run id
-- ARGV[2]  lease token
-- ARGV[3]  key
-- ARGV[4]  value (JSON text)
--
-- Returns 1 when stored (replacing the key's earlier value), 0 when the run is not
-- running under that token (nothing written).

local run_id, token, key, value = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not lease_held(run_id, token) then
  return 0
end
redis.call('HSET', published_key(run_id), key, value)
return 1
