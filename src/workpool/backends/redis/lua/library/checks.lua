-- Library: the checks of every field of a run hash that scripts read as a number, flag,
-- state or JSON (run_problem, corrupt.lua), so a corrupt record is set aside (aside.lua)
-- instead of failing a script half-way.

local RUN_STATES = { scheduled = true, queued = true, running = true, suspended = true,
  succeeded = true, failed = true, canceled = true }
local GONE = 'its record is gone (no hash)'  -- for a run id: it names no run
local EARLIEST, LATEST = -62135596800, 253402300799  -- years 1 and 9999, as Python reads

-- A decimal string's number if it is one, finite (no 'nan', 'inf', hex or spaces).
local function finite_number(text)
  local number = type(text) == 'string' and not string.find(text, '[^%d%.eE%+%-]')
    and tonumber(text)
  if not number or number ~= number or math.abs(number) == math.huge then return nil end
  return number
end

-- A check: whether a decimal string is a finite number from low to high.
local function number_in(low, high)
  return function(text)
    local number = finite_number(text)
    return number ~= nil and number >= low and number <= high
  end
end

-- Whether a decimal string is a whole number of at most 15 digits.
local function whole(text) return #text <= 15 and string.find(text, '^%-?%d+$') ~= nil end

-- Whether text is a JSON list whose items pass item_ok.
local function json_list(text, item_ok)
  local ok, value = pcall(cjson.decode, text)
  if not ok or type(value) ~= 'table' then return false end
  for _, item in ipairs(value) do if not item_ok(item) then return false end end
  return true
end

-- Whether a JSON list item is a hook (hooks.lua reads these), or a limit (rates.lua).
local function hook_ok(hook)
  return type(hook) == 'table' and type(hook.workflow) == 'string'
    and type(hook.queue) == 'string' and type(hook.context) == 'string'
end
local function limit_ok(limit)
  return type(limit) == 'table' and type(limit[1]) == 'string'
    and type(limit[2]) == 'number' and type(limit[3]) == 'number'
end
-- Whether a stored value is good for its kind.
local GOOD = {
  state = function(text) return RUN_STATES[text] == true end,
  text = function() return true end,
  count = function(text) return whole(text) and tonumber(text) >= 0 end,
  integer = whole,
  limit = function(text) return whole(text) and tonumber(text) >= 1 end,
  flag = function(text) return text == '0' or text == '1' end,
  time = number_in(EARLIEST, LATEST),
  seconds = number_in(0, 1e12),
  offset = number_in(-1e12, 1e12),
  hooks = function(text) return json_list(text, hook_ok) end,
  rate = function(text) return json_list(text, limit_ok) end,
  events = function(text)
    return text == '' or json_list(text, function(key) return type(key) == 'string' end)
  end,
}

-- The fields checked, each { name, kind, required }.
local CHECKED = {
  { 'status', 'state', true }, { 'queue', 'text', true }, { 'workflow', 'text', true },
  { 'attempts', 'count', true }, { 'created_at', 'time', true },
  { 'available_at', 'time', true }, { 'cancel_requested', 'flag', true },
  { 'lease_losses', 'count', true }, { 'claims', 'count' }, { 'timeout', 'seconds' },
  { 'rank_offset', 'offset' }, { 'priority', 'integer' }, { 'run_time', 'seconds' },
  { 'attempt_time', 'seconds' }, { 'started_at', 'time' }, { 'finished_at', 'time' },
  { 'gate', 'text' }, { 'gate_limit', 'limit' }, { 'lease_token', 'text' },
  { 'hooks', 'hooks' }, { 'rate', 'rate' }, { 'awaited_events', 'events' },
}
local CHECKED_NAMES = {}
for i, check in ipairs(CHECKED) do CHECKED_NAMES[i] = check[1] end  -- HMGET's arguments
