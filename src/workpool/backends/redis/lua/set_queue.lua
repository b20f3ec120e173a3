-- set_queue: change a queue's settings in one atomic step (Backend.set_queue).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  queue name
-- ARGV[2]  max_parallelism: 'keep' (unchanged), 'none' (no limit) or a whole number
-- ARGV[3]  paused: 'keep' (unchanged), '1' or '0'
-- ARGV[4]  only_if_new: '1' changes nothing if the queue already has settings, '0'
--
-- Returns { max_parallelism (string) or nil, paused ('1' or '0') } as now stored.
-- When the change lets more runs start (resumed, limit raised or removed) and the
-- queue has room and claimable runs, its idle workers are woken.

local queue, new_limit, new_paused = ARGV[1], ARGV[2], ARGV[3]
local key = settings_key(queue)
local stored = redis.call('HMGET', key, 'max_parallelism', 'paused')
if ARGV[4] == '1' and stored[2] then  -- paused is always written: the queue has settings
  return stored
end

-- How many runs the settings let run at once (math.huge: no limit).
local function capacity(limit, paused)
  if paused then
    return 0
  end
  return tonumber(limit) or math.huge
end

local limit, paused = stored[1], stored[2] == '1'
if new_limit == 'none' then
  limit = false
elseif new_limit ~= 'keep' then
  limit = new_limit
end
if new_paused ~= 'keep' then
  paused = new_paused == '1'
end
local paused_flag = paused and '1' or '0'
if limit then
  redis.call('HSET', key, 'max_parallelism', limit, 'paused', paused_flag)
else
  redis.call('HSET', key, 'paused', paused_flag)
  if stored[1] then
    redis.call('HDEL', key, 'max_parallelism')
  end
end
local grew = capacity(limit, paused) > capacity(stored[1], stored[2] == '1')
local room = room_in(queue, tonumber(limit), paused)
if grew and room > 0 then
  wake_queue(queue, math.min(room, WAKE_AT_MOST))
end
return { limit, paused_flag }
