-- Library: storing runs and putting them in (or back in) their queue. Times are decimal
-- strings passed through unchanged, so no precision is lost to Lua's number formatting.

local TERMINAL = { succeeded = true, failed = true, canceled = true }

-- The fields of a run that transitions read (run[1..10]: status, queue, workflow, hooks,
-- parent_run_id, parent_step, has_steps, gate, gate_limit, admitted), those named after
-- (run[11], ...), run.batch, run.deadline, run.gate_list (nil: none), run.problem and run.fields
-- (run_problem's).
local function read_run(run_id, ...)
  local named = { 'status', 'queue', 'workflow', 'hooks', 'parent_run_id', 'parent_step',
    'has_steps', 'gate', 'gate_limit', 'admitted', ... }
  named[#named + 1] = 'batch'
  named[#named + 1] = 'deadline'
  local problem, fields, run = run_problem(run_id, named)
  run.batch, run.problem, run.fields = run[#named - 1] or nil, problem, fields
  run.deadline, run.gate_list = run[#named] or nil, fields.gate_list
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
    at_once = at_once and redis.call('HEXISTS', run_key(run_id), 'gate_list') == 0
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
    leave_gate(run[8], run[9], run.gate_list)
  end
end
