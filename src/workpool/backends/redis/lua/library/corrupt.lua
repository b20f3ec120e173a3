-- Library: finding a corrupt run record (run_problem: every field checks.lua checks; the
-- hot path checks fewer, narrow.lua), and noting a run set aside for it: in corrupt_key
-- (run id -> its problem), its hash left as found (get_run reads both; aside.lua spends
-- a running run's lease token), out of its listing indexes and its workflow's
-- cancelable set; the next claim reports it, once (corrupt_unreported_key). aside.lua
-- takes it out of its queue indexes.

-- hash: run id -> what is wrong with its record
local function corrupt_key() return prefix .. ':corrupt' end
-- list: ids set aside and not yet reported by a claim, oldest first
local function corrupt_unreported_key() return prefix .. ':corrupt:unreported' end

-- The HMGET of run_problem for extra: its names (extra, then the checked names not among
-- them) and the position of each checked name in them; made once per list per call.
local layouts = {}  -- extra names, joined -> that layout
local function layout_of(extra)
  local key = extra and table.concat(extra, ' ') or ''
  local layout = layouts[key]
  if layout then return layout end
  local names, at, positions = {}, {}, {}
  for i, name in ipairs(extra or {}) do names[i], at[name] = name, at[name] or i end
  for i, name in ipairs(CHECKED_NAMES) do
    if not at[name] then
      names[#names + 1] = name
      at[name] = #names
    end
    positions[i] = at[name]
  end
  layout = { names = names, positions = positions }
  layouts[key] = layout
  return layout
end

-- What is wrong with a run's stored record (a sentence naming the field; GONE: it has no
-- hash), or nil; its fields read, by name; and the values of the names in extra (a list,
-- or nil), in order, read in the same HMGET (absent: false).
local function run_problem(run_id, extra)
  local layout = layout_of(extra)
  local names, at = layout.names, layout.positions
  local stored = redis.pcall('HMGET', run_key(run_id), unpack(names))
  if stored.err then
    return 'its key holds a ' .. redis.call('TYPE', run_key(run_id)).ok .. ', not a hash', {}, {}
  end
  local fields = {}
  for i = 1, #names do fields[names[i]] = stored[i] or nil end
  if next(fields) == nil then return GONE, fields, stored end
  for i = 1, #CHECKED_NAMES do
    local value = stored[at[i]]
    if not value then
      if i <= REQUIRED_CHECKED then
        return "field '" .. CHECKED_NAMES[i] .. "' is missing", fields, stored
      end
    elseif not good(CHECKED_KINDS[i], value) then
      return "field '" .. CHECKED_NAMES[i] .. "' is malformed: " .. string.format('%q', value),
        fields, stored
    end
  end
  if fields.status == 'running' and not (fields.started_at and fields.lease_token) then
    return "field 'started_at' or 'lease_token' is missing (the run is running)", fields, stored
  elseif fields.gate and not fields.gate_limit then
    return "field 'gate_limit' is missing (the run has a gate)", fields, stored
  end
  return nil, fields, stored
end

local LISTED_STATES = { 'scheduled', 'queued', 'running', 'suspended', 'needs_attention',
  'paused', 'succeeded', 'failed', 'canceled' }

-- Note a corrupt run (problem: run_problem's sentence; fields: its checked fields): once
-- in corrupt_key, out of its listing indexes and cancelable set when its queue and
-- workflow are known (given: those of the index it was found in, else its fields).
local function note_corrupt(run_id, problem, fields, queue, workflow)
  if redis.call('HSETNX', corrupt_key(), run_id, problem) == 1 then
    redis.call('RPUSH', corrupt_unreported_key(), run_id)
  end
  queue, workflow = queue or fields.queue, workflow or fields.workflow
  if queue and workflow then
    local pair = pair_of(queue, workflow)
    for _, status in ipairs(LISTED_STATES) do zrem_later(list_key(status, pair), run_id) end
  end
  if workflow then zrem_later(workflow_cancelable_key(workflow), run_id) end
end

-- The error reply of an operation on a run whose record is corrupt (set aside with it).
local function corrupt_reply(run_id, problem)
  return redis.error_reply('CORRUPT run ' .. run_id .. ': its stored record is corrupt ('
    .. problem .. '); it was set aside and is never claimed: repair or delete it by hand')
end

-- Up to 100 runs set aside and not yet reported, now reported: flat { id, problem, ... }.
local function corrupt_reports()
  local ids, reports = redis.call('LPOP', corrupt_unreported_key(), 100), {}
  if not ids then return reports end
  local problems = redis.call('HMGET', corrupt_key(), unpack(ids))
  for i, run_id in ipairs(ids) do
    reports[#reports + 1], reports[#reports + 2] = run_id, problems[i] or 'corrupt record'
  end
  return reports
end
