-- Library: debounced runs (Backend docstring, "Debounce"; enqueueing.lua). A string holds
-- the id of the run last enqueued with a (workflow, debounce key), which a later enqueue
-- collapses into while that run waits out its window. Made by debouncing() on the first
-- use in a script call, as batches.lua's functions are: most enqueues debounce nothing.

local debouncing_made

local function debouncing()
  if debouncing_made then return debouncing_made end
  local d = {}

  -- string: the id of the run last enqueued with (workflow, key), with a TTL; <len> as
  -- in idempotency_key (keys.lua)
  local function key(workflow, debounce)
    return prefix .. ':debounce:' .. #workflow .. ':' .. workflow .. ':' .. debounce
  end

  -- Milliseconds to keep the pointer to a debounced run that starts at start (a decimal
  -- string): a day past its start, as the caller's clock may run ahead of Redis's (a
  -- pointer to a run that has started is harmless: it is read, then ignored).
  local function ttl_ms(start, now)
    return math.floor((tonumber(start) - tonumber(now)) * 1000) + 86400000
  end

  -- Remember run (run_from_args' run, being stored) as the run of its (workflow,
  -- debounce).
  function d.remember(run, now)
    redis.call('SET', key(run.workflow, run.debounce), run.id, 'PX',
      ttl_ms(run.available_at, now))
  end

  -- If the run remembered for run's (workflow, debounce) still waits out its window at
  -- now (scheduled for its first attempt, no rate reservation, not yet due), give it
  -- run's input and start (no later than its debounce_until), wake its pair for the new
  -- time and return its id; else nil.
  function d.collapse(run, now)
    local pointer = key(run.workflow, run.debounce)
    local pending = redis.call('GET', pointer)
    if not pending then
      return nil
    end
    if problem_of(pending) then return nil end  -- corrupt (set aside) or gone: a new run
    local found = redis.call('HMGET', run_key(pending), 'status', 'attempts',
      'rate_reserved', 'available_at', 'debounce_until', 'queue', 'workflow')
    if found[1] ~= 'scheduled' or found[2] ~= '0' or found[3]
        or tonumber(found[4]) <= tonumber(now) then
      return nil
    end
    local start = run.available_at
    if found[5] and tonumber(found[5]) < tonumber(start) then
      start = found[5]
    end
    redis.call('HSET', run_key(pending), 'input', run.input, 'available_at', start)
    zadd_later(queue_key(found[6], 'scheduled'), start, pending)
    redis.call('PEXPIRE', pointer, ttl_ms(start, now))
    wake(found[6], found[7])
    return pending
  end

  debouncing_made = d
  return d
end
