-- Library: concurrency gates (Backend docstring, "Concurrency gates").
--
-- A gated queued run is either admitted (hash field admitted = '1', in its pair's
-- ready set, claimable) or waiting (in its gate's waiting set, not claimable). A
-- running gated run stays admitted. The 'gates' hash counts each gate's admitted runs
-- (the field is deleted at 0). Claims never look at gates: ready sets hold admitted runs.
-- Ungated runs have no gate field and none of this costs them a command.

-- Admit the gate's waiting runs, smallest rank first (the waiting set's score, as
-- ready.lua ranks), while it admits fewer than limit (the limit of the run that joined
-- or left); count: its admitted runs now. Admitted runs become ready and wake their
-- pair's workers; a corrupt run is set aside. Returns the new count: the caller stores it.
local function admit_waiting(gate, limit, count)
  local room = tonumber(limit) - count
  if room <= 0 then
    return count
  end
  local admitted, popped, wanted = 0, nil, nil
  repeat  -- a corrupt run popped is set aside (never admitted): pop another
    wanted = room - admitted
    popped = redis.call('ZPOPMIN', gate_waiting_key(gate), wanted)
    for i = 1, #popped, 2 do
      local run_id = popped[i]
      local problem, run = run_problem(run_id)
      if problem then
        note_corrupt(run_id, problem, run)
      elseif not run.gate_list  -- else, admitted at every gate or waiting at a full one
          or admitted_elsewhere(run_id, gate, run.gate_list, popped[i + 1]) then
        redis.call('HSET', run_key(run_id), 'admitted', '1')
        make_ready(run_id, run.queue, run.workflow, run.available_at)
        wake(run.queue, run.workflow)
        admitted = admitted + 1
      end
    end
  until admitted >= room or #popped / 2 < wanted
  return count + admitted
end

-- Store a gate's admitted count if it changed from old (none left: no field).
local function store_count(gate, count, old)
  if count == old then
    return
  elseif count <= 0 then
    redis.call('HDEL', gates_key(), gate)
  else
    redis.call('HSET', gates_key(), gate, count)
  end
end

-- Before a gated run becomes queued: its gate's admitted count, and whether the gate
-- admits it at once (it has room and no run waits; a waiting run would be older).
local function gate_room(gate, limit)
  local count = tonumber(redis.call('HGET', gates_key(), gate) or '0')
  return count, count < tonumber(limit) and redis.call('ZCARD', gate_waiting_key(gate)) == 0
end

-- A gated run became queued (status set, in no queue index; with at_once, its field
-- admitted is set too). count, at_once: gate_room's answer; offset: its rank_offset, or
-- nil to read it. Admitted at once, it goes ready and the caller wakes its pair (returns
-- true); else it waits at the gate by rank, and the gate admits what it can (maybe this
-- run, waking its pair; returns false).
local function join_gate(run_id, gate, limit, queue, workflow, available_at, count, at_once,
                         offset)
  if at_once then
    make_ready(run_id, queue, workflow, available_at)
    store_count(gate, count + 1, count)
    return true
  end
  if offset == nil then offset = redis.call('HGET', run_key(run_id), 'rank_offset') end
  redis.call('ZADD', gate_waiting_key(gate), rank_of(available_at, offset or nil), run_id)
  store_count(gate, admit_waiting(gate, limit, count), count)
  return false
end

-- An admitted run stops being admitted (it ends, retries, suspends or is requeued;
-- the caller clears its field admitted): the gate admits its oldest waiting runs. With
-- gate_list (several.lua), it frees a place at each of its gates, then each admits.
local function leave_gate(gate, limit, gate_list)
  if not gate_list then
    local count = tonumber(redis.call('HGET', gates_key(), gate) or '1')
    store_count(gate, admit_waiting(gate, limit, count - 1), count)
    return
  end
  local gates = cjson.decode(gate_list)
  for _, entry in ipairs(gates) do redis.call('HINCRBY', gates_key(), entry[1], -1) end
  for _, entry in ipairs(gates) do
    local count = tonumber(redis.call('HGET', gates_key(), entry[1]) or '0')
    store_count(entry[1], admit_waiting(entry[1], entry[2], count), nil)
  end
end
