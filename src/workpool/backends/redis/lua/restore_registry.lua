-- restore_registry: store the registry records a live worker found missing
-- (Backend.restore_registry).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1..] pairs: workflow name, record JSON text (as sync_registry.lua takes them)
--
-- Returns the names stored, sorted. A name that has a record keeps it, whoever wrote
-- it (a newer version of the app may have registered it since the heartbeat looked).

local registry = registry_key()
local restored = {}
for i = 1, #ARGV, 2 do
  if redis.call('HSETNX', registry, ARGV[i], ARGV[i + 1]) == 1 then
    restored[#restored + 1] = ARGV[i]
  end
end
table.sort(restored)
return restored
