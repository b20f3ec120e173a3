-- enqueue: store a batch of new runs in one atomic step (Backend.enqueue).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  JSON array of runs, each an object with
--            id, workflow, queue, input (JSON text), available_at (seconds, string),
--            and optionally retry (JSON text), hooks (JSON text of a list of
--            {workflow, queue, context (JSON text), retry (JSON text), on_failure_only}),
--            idempotency_key, idempotency_expires_at (seconds, string: now + TTL)
--            and idempotency_ttl_ms (integer milliseconds, for PEXPIRE)
--
-- Returns a flat array, two entries per input run in input order:
--   run id (the new run, or the earlier run holding the idempotency key), created (1|0)
--
-- An idempotency key is a string "<expires_at> <run id>" with a real TTL as well, so
-- it is honoured against the caller's clock and still garbage-collected by Redis.

local now = ARGV[1]

-- The run id an unexpired idempotency key remembers, or nil.
local function remembered(key)
  local value = redis.call('GET', key)
  if not value then
    return nil
  end
  local space = string.find(value, ' ', 1, true)
  if tonumber(string.sub(value, 1, space - 1)) > tonumber(now) then
    return string.sub(value, space + 1)
  end
  return nil
end

local function enqueue_one(run)
  local key = nil
  if run.idempotency_key then
    key = idempotency_key(run.workflow, run.idempotency_key)
    local earlier = remembered(key)
    if earlier then
      return earlier, 0
    end
  end
  if redis.call('EXISTS', run_key(run.id)) == 1 then
    return run.id, 0
  end
  if key then
    local value = run.idempotency_expires_at .. ' ' .. run.id
    redis.call('SET', key, value, 'PX', run.idempotency_ttl_ms)
  end
  store_run(run, now)
  wake(run.queue)
  return run.id, 1
end

local results = {}
for _, run in ipairs(cjson.decode(ARGV[2])) do
  local run_id, created = enqueue_one(run)
  results[#results + 1] = run_id
  results[#results + 1] = created
end
return results
