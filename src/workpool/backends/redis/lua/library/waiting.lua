-- Library: storing runs and putting them in (or back in) their queue. Times are decimal
-- strings passed through unchanged, so no precision is lost to Lua's number formatting.

local TERMINAL = { succeeded = true, failed = true, canceled = true }

-- The fields of a run that transitions read (run[1..10]: status, queue, workflow, hooks,
-- parent_run_id, parent_step, has_steps, gate, gate_limit, admitted), those named after
-- (run[11], ...), run.batch (nil: none), run.problem and run.fields (run_problem's).
local function read_run(run_id, ...)
  local named = { 'status', 'queue', 'workflow', 'hooks', 'parent_run_id', 'parent_step',
    'has_steps', 'gate', 'gate_limit', 'admitted', ... }
  named[#named + 1] = 'batch'
  local problem, fields, run = run_problem(run_id, named)
  run.batch, run.problem, run.fields = run[#named] or nil, problem, fields
  return run
end

-- Make a run waiting: queued if available_at <= now (ready, or at its gate if gate is
-- set; limit: its gate_limit), else 'scheduled'. run: its status before, queue
-- and workflow (run[1..3], as read_run returns them). rate: its rate field (nil: no
-- limits, or it holds a reservation): queued, it first reserves a start, and a later one
-- makes it 'scheduled' at that start (rates.lua). The caller has already removed it from
-- every other queue index. Returns true when the caller must wake its pair (false when
-- it waits at its gate; a gate wakes the pair of each run it admits).
local function make_waiting(run_id, run, available_at, now, gate, limit, rate)
  local from, queue, workflow = run[1], run[2], run[3]
  if tonumber(available_at) > tonumber(now) then
    set_status(run_id, queue, workflow, from, 'scheduled', 'available_at', available_at)
    zadd_later(queue_key(queue, 'scheduled'), available_at, run_id)
  elseif rate and delay_for_rate(run_id, run, rate, now) then
    return true  -- scheduled at its reserved start: idle workers learn when it is due
  elseif gate then
    local count, at_once = gate_room(gate, limit)
    local fields = { 'available_at', available_at }
    if at_once then fields[3], fields[4] = 'admitted', '1' end
    set_status(run_id, queue, workflow, from, 'queued', unpack(fields))
    return join_gate(run_id, gate, limit, queue, workflow, available_at, count, at_once)
  else
    set_status(run_id, queue, workflow, from, 'queued', 'available_at', available_at)
    make_ready(run_id, queue, workflow, available_at)
  end
  return true
end

-- Drop the lease of a running run: store its lease_token cleared, with the other hash
-- field/value pairs of fields (one HSET), take it out of its leases set, free its place
-- at its gate, if gated, and note that it left 'running'. run: as read_run returns it.
local function drop_lease(run_id, run, fields)
  redis.call('HSET', run_key(run_id), 'lease_token', '', unpack(fields))
  leave_running(run[2])
  zrem_later(queue_key(run[2], 'leases'), run_id)
  if run[10] == '1' then
    redis.call('HDEL', run_key(run_id), 'admitted')
    leave_gate(run[8], run[9])
  end
end

local OPTIONAL_RUN_FIELDS = { 'retry', 'hooks', 'idempotency_key', 'parent_run_id',
  'parent_step', 'gate', 'gate_limit', 'rate', 'rate_reserved', 'retry_of', 'timeout',
  'priority', 'rank_offset', 'batch', 'debounce_until', 'trace' }

-- Store a new run and index it. run: id, workflow, queue, input, available_at and
-- the optional retry, hooks (JSON text), idempotency_key, parent_run_id, parent_step,
-- gate, gate_limit, rate (a due run with limits reserves its start, see rates.lua),
-- retry_of, priority and rank_offset (ready.lua), batch (its batch id), debounce_until
-- (debouncing.lua) and trace (its trace context, returned by claims). Returns true when the caller must wake its pair (see make_waiting).
local function store_run(run, now)
  local status, count, at_once = 'queued', nil, false
  if run.rate and tonumber(run.available_at) <= tonumber(now) then
    run.available_at, run.rate_reserved = reserved_at(run.rate, run.available_at, now)
  end
  if tonumber(run.available_at) > tonumber(now) then
    status = 'scheduled'
  elseif run.gate then
    count, at_once = gate_room(run.gate, run.gate_limit)
  end
  local fields = {
    'id', run.id, 'workflow', run.workflow, 'queue', run.queue, 'input', run.input,
    'attempts', '0', 'created_at', now, 'available_at', run.available_at,
    'cancel_requested', '0', 'lease_losses', '0',
  }
  for _, name in ipairs(OPTIONAL_RUN_FIELDS) do
    if run[name] then
      fields[#fields + 1] = name
      fields[#fields + 1] = run[name]
    end
  end
  if at_once then fields[#fields + 1], fields[#fields + 2] = 'admitted', '1' end
  set_status(run.id, run.queue, run.workflow, nil, status, unpack(fields))
  zadd_later(workflow_cancelable_key(run.workflow), now, run.id)
  if count then
    return join_gate(run.id, run.gate, run.gate_limit, run.queue, run.workflow,
      run.available_at, count, at_once, run.rank_offset or false)
  elseif status == 'queued' then
    add_ready(run.id, run.queue, run.workflow, rank_of(run.available_at, run.rank_offset))
  else
    zadd_later(queue_key(run.queue, 'scheduled'), run.available_at, run.id)
  end
  return true
end
