-- Library: setting aside a corrupt run (checks.lua) wherever it is, so that no script
-- meets it again: out of its queue's indexes (scheduled, leases, its pair's ready set,
-- its gate's waiting set), its place at its gate freed if it held one, and noted
-- (corrupt.lua). Its hash is left as found, but for a running run's lease token, spent
-- (as end_run spends it): a finish or renew checking fewer fields than the check that set
-- it aside still finds the lease lost.

-- Set a corrupt run aside. problem, fields: run_problem's answer; queue, workflow: those
-- of the index it was found in (nil: its fields', if readable).
local function set_aside(run_id, problem, fields, queue, workflow)
  queue, workflow = queue or fields.queue, workflow or fields.workflow
  note_corrupt(run_id, problem, fields, queue, workflow)
  if fields.status == 'running' then  -- its holder's lease is lost, whatever field was bad
    redis.pcall('HSET', run_key(run_id), 'lease_token', '')
  end
  if queue then
    zrem_later(queue_key(queue, 'scheduled'), run_id)
    zrem_later(queue_key(queue, 'deadlines'), run_id)
    local leases = queue_key(queue, 'leases')
    flush_key(leases)
    if redis.call('ZREM', leases, run_id) == 1 then leave_running(queue) end
    if workflow then unready(run_id, queue, workflow) end
  end
  local gate = fields.gate
  if gate then
    redis.call('ZREM', gate_waiting_key(gate), run_id)
    if redis.call('HGET', run_key(run_id), 'admitted') == '1' then
      local count = tonumber(redis.call('HGET', gates_key(), gate) or '1')
      local limit = fields.gate_limit and finite_number(fields.gate_limit)
      if fields.gate_list and good('gates', fields.gate_list) then
        leave_gate(gate, limit, fields.gate_list)
      else
        store_count(gate, limit and admit_waiting(gate, limit, count - 1) or count - 1, count)
      end
    end
  end
end

-- Whether a run as read_run (waiting.lua) returns it is corrupt or gone (run.problem); a
-- corrupt one is set aside.
local function set_aside_if_corrupt(run_id, run)
  if run.problem and run.problem ~= GONE then set_aside(run_id, run.problem, run.fields) end
  return run.problem ~= nil
end

-- run_problem's answer for a run named by id (GONE: no such run), set aside if corrupt.
local function problem_of(run_id)
  local problem, fields = run_problem(run_id)
  if problem and problem ~= GONE then set_aside(run_id, problem, fields) end
  return problem, fields
end

-- Whether a run is running under the lease token (not if its record is corrupt).
local function lease_held(run_id, token)
  local problem, run = problem_of(run_id)
  return not problem and run.status == 'running' and run.lease_token == token
end
