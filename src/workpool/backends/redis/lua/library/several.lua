-- Library: runs under several gates (a workflow's and shared limits'; "Several gates" in
-- contract/enqueue.py). Such a run's gate_list field lists every gate, JSON [[gate id,
-- limit], ...] in id order; its gate and gate_limit fields name the one it waits at.
-- It is admitted at all its gates at once or at none: a gate that admits it (gates.lua,
-- admit_waiting) first checks the others, and a full one keeps it, waiting there, until
-- that one frees a place and examines it again. So it never holds a place while it
-- waits (no deadlock), and it always waits at a gate that was full when it was examined
-- and will examine it when it frees (no lost wake-up).

-- A new run's shared gates (decoded [[gate id, limit], ...]) beside its own gate, if any:
-- with several, gate_list lists them all and gate, gate_limit name the first.
local function with_shared_gates(run, shared)
  if run.gate then shared[#shared + 1] = { run.gate, tonumber(run.gate_limit) } end
  table.sort(shared, function(a, b) return a[1] < b[1] end)
  run.gate, run.gate_limit = shared[1][1], tostring(shared[1][2])
  if #shared > 1 then run.gate_list = cjson.encode(shared) end
end

-- A run under several gates that gate may admit (popped from its waiting set, score:
-- its rank): true if every other gate has room (it takes a place at each); else false,
-- and it now waits at the first full one.
local function admitted_elsewhere(run_id, gate, gate_list, rank)
  local gates = cjson.decode(gate_list)
  for _, entry in ipairs(gates) do
    local other, limit = entry[1], entry[2]
    if other ~= gate and tonumber(redis.call('HGET', gates_key(), other) or '0') >= limit then
      redis.call('HSET', run_key(run_id), 'gate', other, 'gate_limit', tostring(limit))
      redis.call('ZADD', gate_waiting_key(other), rank, run_id)
      return false
    end
  end
  for _, entry in ipairs(gates) do
    if entry[1] ~= gate then redis.call('HINCRBY', gates_key(), entry[1], 1) end
  end
  return true
end
