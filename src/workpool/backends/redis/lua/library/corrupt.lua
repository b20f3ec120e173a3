-- Library: finding a corrupt run record (run_problem, with checks.lua's checks), and
-- noting a run set aside for it: in corrupt_key (run id -> its problem), its hash left as
-- found (get_run reads both), out of its listing indexes and its workflow's cancelable
-- set; the next claim reports it, once (corrupt_unreported_key). aside.lua takes it out
-- of its queue indexes.

-- hash: run id -> what is wrong with its record
local function corrupt_key() return prefix .. ':corrupt' end
-- list: ids set aside and not yet reported by a claim, oldest first
local function corrupt_unreported_key() return prefix .. ':corrupt:unreported' end

-- What is wrong with a run's stored record (a sentence naming the field; GONE: it has no
-- hash), or nil; its checked fields by name; and the values of the names in extra (a
-- list, or nil), in order, read in the same HMGET (absent: false).
local function run_problem(run_id, extra)
  local names = extra and { unpack(extra) } or {}
  for _, name in ipairs(CHECKED_NAMES) do names[#names + 1] = name end
  local stored = redis.pcall('HMGET', run_key(run_id), unpack(names))
  if stored.err then
    return 'its key holds a ' .. redis.call('TYPE', run_key(run_id)).ok .. ', not a hash', {}, {}
  end
  local fields = {}
  for i, name in ipairs(names) do fields[name] = stored[i] or nil end
  if next(fields) == nil then return GONE, fields, stored end
  for _, check in ipairs(CHECKED) do
    local name, value = check[1], fields[check[1]]
    if value == nil then
      if check[3] then return "field '" .. name .. "' is missing", fields, stored end
    elseif not GOOD[check[2]](value) then
      return "field '" .. name .. "' is malformed: " .. string.format('%q', value), fields, stored
    end
  end
  if fields.status == 'running' and not (fields.started_at and fields.lease_token) then
    return "field 'started_at' or 'lease_token' is missing (the run is running)", fields, stored
  elseif fields.gate and not fields.gate_limit then
    return "field 'gate_limit' is missing (the run has a gate)", fields, stored
  end
  return nil, fields, stored
end

local LISTED_STATES = { 'scheduled', 'queued', 'running', 'suspended', 'succeeded',
  'failed', 'canceled' }

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
