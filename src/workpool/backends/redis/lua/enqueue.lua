-- enqueue: store a batch of new runs in one atomic step (Backend.enqueue).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2..] FIELDS values per run, in this order (an empty string means absent):
--            id, workflow, queue, input (JSON text), available_at (seconds, string),
--            retry (JSON text), hooks (JSON text of a list of {workflow, queue,
--            context (JSON text), retry (JSON text), on_failure_only}),
--            idempotency_key, idempotency_expires_at (seconds, string: now + TTL),
--            idempotency_ttl_ms (integer milliseconds, for PEXPIRE)
--
-- Returns a flat array with two entries per run that was NOT created, in input order:
--   its position in the batch (1-based), the id of the run already stored
--   (the earlier run holding its idempotency key, or itself if its id exists)
--
-- An idempotency key is a string "<expires_at> <run id>" with a real TTL as well, so
-- it is honoured against the caller's clock and still garbage-collected by Redis.
-- Flat arguments rather than one JSON document: no decoding, no re-escaped JSON texts.

local FIELDS = 10
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

local function optional(value)
  if value == '' then
    return nil
  end
  return value
end

-- Returns nil when the run was stored, else the id of the run already there.
local function enqueue_one(base)
  local run = {
    id = ARGV[base], workflow = ARGV[base + 1], queue = ARGV[base + 2],
    input = ARGV[base + 3], available_at = ARGV[base + 4], retry = optional(ARGV[base + 5]),
    hooks = optional(ARGV[base + 6]), idempotency_key = optional(ARGV[base + 7]),
  }
  local key = nil
  if run.idempotency_key then
    key = idempotency_key(run.workflow, run.idempotency_key)
    local earlier = remembered(key)
    if earlier then
      return earlier
    end
  end
  if redis.call('EXISTS', run_key(run.id)) == 1 then
    return run.id
  end
  if key then
    redis.call('SET', key, ARGV[base + 8] .. ' ' .. run.id, 'PX', ARGV[base + 9])
  end
  store_run(run, now)
  return nil
end

local skipped = {}
local queues, workflows = {}, {}
for position = 1, (#ARGV - 1) / FIELDS do
  local base = 2 + (position - 1) * FIELDS
  local existing = enqueue_one(base)
  if existing then
    skipped[#skipped + 1] = position
    skipped[#skipped + 1] = existing
  else
    queues[ARGV[base + 2]] = true
    workflows[ARGV[base + 1]] = true
  end
end
for queue in pairs(queues) do
  wake(queue)
end
for workflow in pairs(workflows) do
  redis.call('SADD', workflows_key(), workflow)
end
return skipped
