-- Library: the checks of every field of a run hash that scripts read as a number, flag,
-- state or JSON (all of them: run_problem, corrupt.lua; those an operation names:
-- read_checked, narrow.lua), so a corrupt record is set aside (aside.lua) instead of failing a script
-- half-way.

local RUN_STATES = { scheduled = true, queued = true, running = true, suspended = true,
  needs_attention = true, paused = true, succeeded = true, failed = true, canceled = true }
local GONE = 'its record is gone (no hash)'  -- for a run id: it names no run
local EARLIEST, LATEST = -62135596800, 253402300799  -- years 1 and 9999, as Python reads

-- A decimal string's number if it is one, finite (no 'nan', 'inf', hex or spaces).
local function finite_number(text)
  local number = type(text) == 'string' and not string.find(text, '[^%d%.eE%+%-]')
    and tonumber(text)
  if not number or number ~= number or math.abs(number) == math.huge then return nil end
  return number
end

-- Whether a decimal string is a whole number within +-(2^53 - 1), the largest count
-- workpool stores (validation.MAX_COUNT): doubles hold every such number exactly.
local function whole(text)
  return #text <= 17 and string.find(text, '^%-?%d+$') ~= nil
    and math.abs(tonumber(text)) <= 9007199254740991
end

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
local function event_key_ok(key) return type(key) == 'string' end
local function gate_ok(gate)
  return type(gate) == 'table' and type(gate[1]) == 'string' and type(gate[2]) == 'number'
    and gate[2] >= 1 and gate[2] % 1 == 0
end
-- Whether a stored value (a string) is good for its kind (CHECKED_KINDS): a count is a
-- whole number from 0 to 2^53 - 1; a time or a number of seconds is a finite decimal (no space, hex, 'inf'
-- or 'nan': what Python and ZADD read) in its range. Checks inline, commonest first: a
-- claim makes several per run.
local function good(kind, text)
  if kind == 'count' then
    return text ~= '' and #text <= 16 and not string.find(text, '%D')
      and (#text < 16 or tonumber(text) <= 9007199254740991)
  elseif kind == 'time' or kind == 'seconds' or kind == 'offset' then
    local number = not string.find(text, '[^%d%.eE%+%-]') and tonumber(text)
    if not number then return false end  -- (an infinity is out of every range)
    if kind == 'time' then return number >= EARLIEST and number <= LATEST end
    return number <= 1e12 and number >= (kind == 'seconds' and 0 or -1e12)
  elseif kind == 'flag' then return text == '0' or text == '1'
  elseif kind == 'state' then return RUN_STATES[text] == true
  elseif kind == 'integer' then return whole(text)
  elseif kind == 'limit' then return whole(text) and tonumber(text) >= 1
  elseif kind == 'hooks' then return json_list(text, hook_ok)
  elseif kind == 'rate' then return json_list(text, limit_ok)
  elseif kind == 'gates' then return json_list(text, gate_ok)
  elseif kind == 'events' then return text == '' or json_list(text, event_key_ok)
  end
  return true  -- 'text': any string
end

-- The fields checked and their kinds (good), the first REQUIRED_CHECKED required: flat
-- lists, as a script call builds them each time.
local CHECKED_NAMES = { 'status', 'queue', 'workflow', 'attempts', 'created_at',
  'available_at', 'cancel_requested', 'lease_losses', 'claims', 'timeout', 'rank_offset',
  'priority', 'run_time', 'attempt_time', 'started_at', 'finished_at', 'gate', 'gate_limit',
  'lease_token', 'hooks', 'rate', 'awaited_events', 'gate_list' }
local CHECKED_KINDS = { 'state', 'text', 'text', 'count', 'time', 'time', 'flag', 'count',
  'count', 'seconds', 'offset', 'integer', 'seconds', 'seconds', 'time', 'time', 'text',
  'limit', 'text', 'hooks', 'rate', 'events', 'gates' }
local REQUIRED_CHECKED = 8
