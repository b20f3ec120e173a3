-- Library: enqueueing one new run with its idempotency key (enqueue.lua, save_step.lua).
--
-- A run travels as RUN_FIELDS flat arguments (an empty string means absent):
--   id, workflow, queue, input (JSON text), available_at (seconds, string),
--   retry (JSON text), hooks (JSON text of a list of {workflow, queue,
--   context (JSON text), retry (JSON text), on_failure_only, max_concurrency}),
--   idempotency_key, idempotency_expires_at (seconds, string: now + TTL),
--   idempotency_ttl_ms (integer milliseconds, for PEXPIRE),
--   max_concurrency (integer; absent: the run is not gated),
--   concurrency_key ('' when none, else ':' followed by the key, so that an empty key
--   is still a key; appended to the gate id, see gate_id in keys.lua),
--   rate (JSON text of its rate limits, [[limiter id, count, per], ...]; see rates.lua),
--   timeout (seconds one attempt may execute, string),
--   priority (integer, stored for reading), rank_offset (seconds; see ready.lua),
--   debounce (its debounce key: the run is debounced, see debouncing.lua),
--   debounce_until (seconds, string: the latest its start may move to),
--   trace (opaque text: the trace context of the span that enqueued it, see tracing.py),
--   deadline (seconds, string: when the run must have ended, see deadlines.lua),
--   gates (JSON text of its shared gates, [[gate id, limit], ...]; see gates.lua)
-- An idempotency key is a string "<expires_at> <run id>" with a real TTL as well, so
-- it is honoured against the caller's clock and still garbage-collected by Redis.
-- Flat arguments rather than one JSON document: no decoding, no re-escaped JSON texts.

local RUN_FIELDS = 21

local function optional(value)
  if value == '' then
    return nil
  end
  return value
end

-- The run whose RUN_FIELDS arguments start at ARGV[base], and its key's expiry and
-- TTL: { run, expires_at, ttl_ms }.
local function run_from_args(base)
  local run = {
    id = ARGV[base], workflow = ARGV[base + 1], queue = ARGV[base + 2],
    input = ARGV[base + 3], available_at = ARGV[base + 4], retry = optional(ARGV[base + 5]),
    hooks = optional(ARGV[base + 6]), idempotency_key = optional(ARGV[base + 7]),
    gate_limit = optional(ARGV[base + 10]), rate = optional(ARGV[base + 12]),
    timeout = optional(ARGV[base + 13]), priority = optional(ARGV[base + 14]),
    rank_offset = optional(ARGV[base + 15]), debounce = optional(ARGV[base + 16]),
    debounce_until = optional(ARGV[base + 17]), trace = optional(ARGV[base + 18]),
    deadline = optional(ARGV[base + 19]),
  }
  if run.gate_limit then
    run.gate = gate_id(run.workflow, ARGV[base + 11])
  end
  if ARGV[base + 20] ~= '' then with_shared_gates(run, cjson.decode(ARGV[base + 20])) end
  return { run, ARGV[base + 8], ARGV[base + 9] }
end

-- The run id an unexpired idempotency key remembers, or nil.
local function remembered(key, now)
  local value = redis.call('GET', key)
  if not value then
    return nil
  end
  local space = string.find(value, ' ', 1, true)
  local expires_at = space and tonumber(string.sub(value, 1, space - 1))
  if expires_at and expires_at > tonumber(now) then  -- (malformed: forgotten)
    return string.sub(value, space + 1)
  end
  return nil
end

-- Store the run of run_from_args unless its key or id is taken or it collapses into a
-- debounced run. Returns nil and whether the caller must wake its queue (see store_run)
-- when it was stored, else the id of the run already there (or collapsed into).
local function enqueue_one(parsed, now)
  local run, expires_at, ttl_ms = parsed[1], parsed[2], parsed[3]
  local key = nil
  if run.idempotency_key then
    key = idempotency_key(run.workflow, run.idempotency_key)
    local earlier = remembered(key, now)
    if earlier then
      return earlier
    end
  end
  -- Before debounce: a repeated enqueue (a client sending again after a lost reply)
  -- finds its own run, which may be the debounced run.
  if run_exists(run.id) then
    return run.id
  end
  local pending = run.debounce and debouncing().collapse(run, now)
  if pending then
    return pending
  end
  if key then
    redis.call('SET', key, expires_at .. ' ' .. run.id, 'PX', ttl_ms)
  end
  if run.debounce then
    debouncing().remember(run, now)
  end
  absent_ids[run.id] = nil  -- stored now (existing.lua)
  return nil, store_run(run, now)
end
