-- Library: the signals that wake idle workers, per (queue, workflow). A worker blocks on
-- the signal lists of the pairs it serves; a list holds at most one token, pushed once
-- per pair per script call.

local function signal_key(queue, workflow)
  return prefix .. ':signal:' .. pair_of(queue, workflow)
end

local woken_signals = {}  -- signal lists given a token during this script call

-- Wake a worker serving (queue, workflow).
local function wake(queue, workflow)
  local signal = signal_key(queue, workflow)
  if woken_signals[signal] then
    return
  end
  woken_signals[signal] = true
  if redis.call('LLEN', signal) == 0 then
    redis.call('RPUSH', signal, '1')
  end
end

-- Wake the workers of up to most workflows with claimable runs in the queue, oldest
-- first; returns whether it has any.
local function wake_queue(queue, most)
  flush_key(heads_key(queue))
  local first = redis.call('ZRANGE', heads_key(queue), 0, most - 1)
  for _, workflow in ipairs(first) do
    wake(queue, workflow)
  end
  return #first > 0
end
