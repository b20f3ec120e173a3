-- Library: queue settings (Backend docstring, "Queue limits"): how many runs a claim
-- may start in a queue, and waking a limited queue's workers when runs leave 'running'.
--
-- A queue's settings hash (settings_key) holds max_parallelism (absent: no limit) and
-- paused ('1' or '0'); a queue without it has no limit and is not paused. The queue's
-- running runs are its 'leases' set, so counting them is one ZCARD (O(1)).

-- A queue's settings: max_parallelism (a number, nil: no limit) and paused (boolean).
local function read_settings(queue)
  local stored = redis.call('HMGET', settings_key(queue), 'max_parallelism', 'paused')
  return tonumber(stored[1]), stored[2] == '1'
end

-- How many more runs of the queue may start now, its settings allowing: 0 or less
-- when paused or full, math.huge without a limit (then no command is run).
local function room_in(queue, max_parallelism, paused)
  if paused then
    return 0
  elseif not max_parallelism then
    return math.huge
  end
  local leases = queue_key(queue, 'leases')
  flush_key(leases)
  return max_parallelism - redis.call('ZCARD', leases)
end

local settings_read = {}  -- queue -> { max_parallelism, paused }, read once per call

-- How many more runs of the queue may start now (room_in), its settings read once per
-- script call.
local function room_now(queue)
  if not settings_read[queue] then settings_read[queue] = { read_settings(queue) } end
  return room_in(queue, settings_read[queue][1], settings_read[queue][2])
end

-- The earlier of best and the lowest score of a sorted set (decimal strings).
local function earliest(key, best)
  flush_key(key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] and (not best or tonumber(first[2]) < tonumber(best)) then return first[2] end
  return best
end

-- The queues in which runs left 'running' during this script call (name -> true),
-- noted by drop_lease and end_run. The scripts that make running runs leave (finish,
-- release) call wake_left_queues at their end; claim does not: it wakes a queue that
-- has room and claimable runs after taking, whatever made the room.
local left_running = {}

local function leave_running(queue)
  left_running[queue] = true
end

-- Most workflows of a queue whose workers one change of room wakes (the oldest first).
local WAKE_AT_MOST = 16

-- Wake each queue runs left 'running' in if it has a max_parallelism, is not paused,
-- and has room: the workers of its oldest claimable runs' workflows may have stopped at
-- the limit. One HMGET per queue per script call, so an unlimited queue costs nothing
-- per run.
local function wake_left_queues()
  for queue in pairs(left_running) do
    local max_parallelism, paused = read_settings(queue)
    if max_parallelism then
      local room = room_in(queue, max_parallelism, paused)
      if room > 0 then
        wake_queue(queue, math.min(room, WAKE_AT_MOST))
      end
    end
  end
end
