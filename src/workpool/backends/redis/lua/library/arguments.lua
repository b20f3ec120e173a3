-- Library: checks of the numeric arguments of enqueue.lua, finish.lua and save_step.lua,
-- made for every entry of a batch before the first write, so a bad number gets an error
-- reply and nothing is written (their callers check first too: backends/checks.py).
-- Each bad_* function returns that error reply, or nil when its arguments are good.

-- Whether value (a decimal string) reads as a finite number: not NaN, not infinite.
local function finite(value)
  local number = tonumber(value)
  return number ~= nil and number == number and math.abs(number) ~= math.huge
end

local function refuse(where, what, value)
  return redis.error_reply('invalid argument: ' .. where .. what .. ' ' .. tostring(value)
    .. ' is not a finite number in range; nothing was written')
end

-- ARGV[1], the operation's now.
local function bad_now()
  if not finite(ARGV[1]) then
    return refuse('', 'now', ARGV[1])
  end
end

-- The optional time field of a finish (a decoded finish.lua entry).
local function bad_time(finish, field)
  if finish[field] ~= nil and not finite(finish[field]) then
    return refuse('run ' .. tostring(finish.run_id) .. ': ', field, finish[field])
  end
end

-- now and every entry of a batch of finishes (decoded finish.lua entries).
local function bad_finishes(finishes)
  local refused = bad_now()
  for _, finish in ipairs(finishes) do
    refused = refused or bad_time(finish, 'retry_at') or bad_time(finish, 'wake_at')
  end
  return refused
end

-- The new run whose RUN_FIELDS arguments start at ARGV[base] (enqueueing.lua): its
-- available_at; with a key, its expiry and TTL (ms, >= 1); with a gate, its limit (>= 1);
-- its rank_offset, within 1e12 s either way; its debounce_until, if any; its shared
-- gates, a JSON list of [gate id, limit >= 1], if any.
local function bad_new_run(base)
  local where = 'run ' .. ARGV[base] .. ': '
  local gates = ARGV[base + 20]
  if gates ~= '' then
    local ok, list = pcall(cjson.decode, gates)
    ok = ok and type(list) == 'table' and #list > 0
    for _, gate in ipairs(ok and list or {}) do
      local limit = type(gate) == 'table' and gate[2]
      ok = ok and type(gate[1]) == 'string' and type(limit) == 'number' and limit >= 1
        and limit % 1 == 0 and finite(limit)
    end
    if not ok then return refuse(where, 'gates', gates) end
  end
  local offset = ARGV[base + 15]
  if offset ~= '' and not (finite(offset) and math.abs(tonumber(offset)) <= 1e12) then
    return refuse(where, 'rank_offset', offset)
  end
  local checks = { { 4, 'available_at' } }
  if ARGV[base + 7] ~= '' then
    checks[2], checks[3] = { 8, 'idempotency expiry' }, { 9, 'idempotency TTL', 1 }
  end
  if ARGV[base + 10] ~= '' then
    checks[#checks + 1] = { 10, 'max_concurrency', 1 }
  end
  if ARGV[base + 17] ~= '' then
    checks[#checks + 1] = { 17, 'debounce_until' }
  end
  if ARGV[base + 19] ~= '' then
    checks[#checks + 1] = { 19, 'deadline' }
  end
  for _, check in ipairs(checks) do
    local value = ARGV[base + check[1]]
    if not finite(value) or (check[3] and tonumber(value) < check[3]) then
      return refuse(where, check[2], value)
    end
  end
end
