-- acquire_lease: take or extend a named lease, one holder at a time (Backend.acquire_lease).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  the lease name (e.g. 'cron')
-- ARGV[2]  holder
-- ARGV[3]  now, seconds since the epoch (decimal string)
-- ARGV[4]  expires_at: now + the lease's seconds (decimal string)
-- ARGV[5]  the lease's length in whole milliseconds (at least 1), for PX
--
-- The key holds "<expires_at> <holder>" (see lease_key in library/keys.lua): the
-- expiry is honoured against the caller's clock; the real TTL only lets Redis
-- garbage-collect a lease nobody renews.
--
-- Returns 1 if holder now holds the lease (it was free, expired or already its own),
-- else 0 (nothing changed).

local key, holder, now = lease_key(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local value = redis.call('GET', key)
if value then
  local space = string.find(value, ' ', 1, true)
  local held_until = tonumber(string.sub(value, 1, space - 1))
  if held_until > now and string.sub(value, space + 1) ~= holder then
    return 0
  end
end
redis.call('SET', key, ARGV[4] .. ' ' .. holder, 'PX', ARGV[5])
return 1
