-- Library: narrow reads of a run hash for the hot path (a claim's start, finish): one
-- HMGET of the names an operation lists (those it reads and uses, then those it checks
-- for the operations that follow), each checked as run_problem (corrupt.lua) checks it,
-- before the operation's first write for the run; the whole record is read only when a
-- run is corrupt, to set it aside.

-- A narrow read (read_checked): the checked kind of each of names (false: not checked),
-- which are required (the first REQUIRED_CHECKED names of checks.lua) and the position of
-- each name; made once per list per call (a script's lists are its own constants).
local narrow_reads = {}  -- names -> its read
local function narrow_read(names)
  local read = narrow_reads[names]
  if read then return read end
  local kinds, at, required = {}, {}, {}
  for i, name in ipairs(names) do kinds[i], at[name] = false, at[name] or i end
  for i, name in ipairs(CHECKED_NAMES) do
    if at[name] then  -- (any string is good text: only its presence is checked)
      kinds[at[name]] = CHECKED_KINDS[i] ~= 'text' and CHECKED_KINDS[i]
      if i <= REQUIRED_CHECKED then required[#required + 1] = at[name] end
    end
  end
  read = { kinds = kinds, at = at, required = required }
  narrow_reads[names] = read
  return read
end

-- run_problem for the fields of names only (those an operation reads and uses, then
-- those it checks for the operations that follow), in ONE HMGET of names: the problem
-- (GONE: no hash) or nil, and the values of names, in order (absent: false).
local function read_checked(run_id, names)
  local read = narrow_read(names)
  local stored = redis.pcall('HMGET', run_key(run_id), unpack(names))
  if stored.err then
    return 'its key holds a ' .. redis.call('TYPE', run_key(run_id)).ok .. ', not a hash', {}
  end
  for _, i in ipairs(read.required) do
    if not stored[i] then  -- (none of names stored: no hash)
      for j = 1, #names do
        if stored[j] then return "field '" .. names[i] .. "' is missing", stored end
      end
      return GONE, stored
    end
  end
  local kinds = read.kinds
  for i = 1, #names do
    local value, kind = stored[i], kinds[i]
    if kind and value and not good(kind, value) then
      return "field '" .. names[i] .. "' is malformed: " .. string.format('%q', value), stored
    end
  end
  local at = read.at
  if at.started_at and at.lease_token and stored[at.status] == 'running'
      and not (stored[at.started_at] and stored[at.lease_token]) then
    return "field 'started_at' or 'lease_token' is missing (the run is running)", stored
  elseif at.gate_limit and stored[at.gate] and not stored[at.gate_limit] then
    return "field 'gate_limit' is missing (the run has a gate)", stored
  end
  return nil, stored
end

-- read_run with a narrow read (read_checked): names are read_run's ten, the
-- caller's (run[11], ...), 'batch', then any the caller only checks; only these are read
-- and checked. run.fields: the whole record's checked fields, read if it is corrupt.
local function read_run_checked(run_id, names)
  local problem, run = read_checked(run_id, names)
  local at = narrow_read(names).at
  run.batch, run.problem = run[at.batch] or nil, problem
  run.deadline = at.deadline and run[at.deadline] or nil
  run.gate_list = at.gate_list and run[at.gate_list] or nil
  if problem then
    local _, fields = run_problem(run_id)
    run.fields = fields
  end
  return run
end
