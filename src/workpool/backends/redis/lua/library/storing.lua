-- Library: storing a new run and putting it in its queue's indexes (enqueueing.lua).

local OPTIONAL_RUN_FIELDS = { 'retry', 'hooks', 'idempotency_key', 'parent_run_id',
  'parent_step', 'gate', 'gate_limit', 'rate', 'rate_reserved', 'retry_of', 'timeout',
  'priority', 'rank_offset', 'batch', 'debounce_until', 'trace', 'deadline', 'gate_list' }

-- Store a new run and index it. run: id, workflow, queue, input, available_at and
-- the optional retry, hooks (JSON text), idempotency_key, parent_run_id, parent_step,
-- gate, gate_limit, gate_list, rate (a due run with limits reserves its start, see rates.lua),
-- retry_of, priority and rank_offset (ready.lua), batch (its batch id), debounce_until
-- (debouncing.lua), trace (its trace context, returned by claims) and deadline (also in
-- its queue's deadlines set, deadlines.lua). Returns true when the caller must wake its
-- pair (see make_waiting).
local function store_run(run, now)
  local status, count, at_once = 'queued', nil, false
  if run.rate and tonumber(run.available_at) <= tonumber(now) then
    run.available_at, run.rate_reserved = reserved_at(run.rate, run.available_at, now)
  end
  if tonumber(run.available_at) > tonumber(now) then
    status = 'scheduled'
  elseif run.gate then
    count, at_once = gate_room(run.gate, run.gate_limit)
    at_once = at_once and not run.gate_list  -- several gates: admit_waiting checks them
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
  if run.deadline then zadd_later(queue_key(run.queue, 'deadlines'), run.deadline, run.id) end
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
