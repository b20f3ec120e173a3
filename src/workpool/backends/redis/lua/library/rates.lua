-- Library: rate limits (Backend docstring, "Rate limits"): GCRA start reservations.
--
-- A run's limits are its hash field rate: JSON text of [[limiter id, count, per], ...]
-- (absent: none, and nothing here costs it a command). A limiter allows count starts
-- per per seconds: starts are spaced T = per / count apart, with a burst of count
-- (tau = per - T). Its key (limiter_key) holds its TAT, the theoretical arrival time
-- (decimal seconds; absent: now). A run reserves when it becomes queued without a
-- reservation: its start is the latest of now and each limiter's TAT - tau, and each
-- limiter's TAT becomes max(TAT, start) + T. A start later than now makes the run
-- scheduled at it with rate_reserved = '1'; claim.lua promotes it when due, clears the
-- flag and queues it without reserving again.

-- A number as a decimal string that reads back as the same number.
local function decimal(value)
  return string.format('%.17g', value)
end

-- Reserve a start for a run whose rate field is rate at now (a decimal string): the
-- earliest time all its limiters allow, each limiter recording it. Returns the start
-- (a number, at least now).
local ROUNDING = 1e-6

local function reserve(rate, now)
  local at = tonumber(now)
  local limiters, tats, start = cjson.decode(rate), {}, at
  for i, limiter in ipairs(limiters) do
    tats[i] = tonumber(redis.call('GET', limiter_key(limiter[1])) or now)
    start = math.max(start, tats[i] - (limiter[3] - limiter[3] / limiter[2]))
  end
  if start - at < ROUNDING then
    start = at  -- a burst start a rounding error after now is now
  end
  for i, limiter in ipairs(limiters) do
    local tat = math.max(tats[i], start) + limiter[3] / limiter[2]
    -- Once now passes tat the key means what its absence does: it may then vanish.
    local ttl_ms = math.ceil((tat - at + limiter[3]) * 1000) + 1000
    redis.call('SET', limiter_key(limiter[1]), decimal(tat), 'PX', string.format('%d', ttl_ms))
  end
  return start
end

-- The available_at and rate_reserved of a run with limits (rate: its rate field) that
-- is about to become queued at now without a reservation: its reserved start and '1'
-- if that is later than now, else its own available_at and nil.
local function reserved_at(rate, available_at, now)
  local start = reserve(rate, now)
  if start > tonumber(now) then
    return decimal(start), '1'
  end
  return available_at, nil
end

-- make_waiting's case of a run with limits, due, without a reservation: reserves its
-- start; if that is later than now, the run (in no queue index; run: as make_waiting
-- takes it) becomes scheduled at it, holding the reservation, and this returns true;
-- else false: the caller queues it.
local function delay_for_rate(run_id, run, rate, now)
  local at, reserved = reserved_at(rate, nil, now)
  if not reserved then
    return false
  end
  set_status(run_id, run[2], run[3], run[1], 'scheduled', 'available_at', at,
    'rate_reserved', reserved)
  zadd_later(queue_key(run[2], 'scheduled'), at, run_id)
  return true
end
