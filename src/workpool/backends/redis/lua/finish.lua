-- finish: end attempts reported by their lease holders (Backend.finish).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  JSON array of finishes, each an object with run_id, token,
--          status ('succeeded' | 'failed' | 'canceled' | 'retry') and optionally
--          output (JSON text), error (JSON text), retry_at (seconds, decimal string)
--
-- Returns an array of 1 (applied) or 0 (lease not held: nothing changed), in order.
-- A cancel request turns failed, canceled and retry into canceled.

local now = ARGV[1]

local function retry(run_id, queue, retry_at)
  drop_lease(run_id, queue)
  make_waiting(run_id, queue, retry_at or now, now)
  wake(queue)
end

local function apply(finish)
  local run = read_run(finish.run_id, 'lease_token', 'cancel_requested')
  if run[1] ~= 'running' or run[5] ~= finish.token then
    return 0
  end
  if finish.status == 'succeeded' then
    local fields = {}
    if finish.output then
      fields = { 'output', finish.output }
    end
    end_run(finish.run_id, run, 'succeeded', now, fields)
    return 1
  end
  local fields = {}
  if finish.error and finish.status ~= 'canceled' then
    fields = { 'error', finish.error }
  end
  if run[6] == '1' then
    end_run(finish.run_id, run, 'canceled', now, fields)
  elseif finish.status == 'retry' then
    if fields[1] then
      redis.call('HSET', run_key(finish.run_id), unpack(fields))
    end
    retry(finish.run_id, run[2], finish.retry_at)
  else
    end_run(finish.run_id, run, finish.status, now, fields)
  end
  return 1
end

local results = {}
for _, finish in ipairs(cjson.decode(ARGV[2])) do
  results[#results + 1] = apply(finish)
end
return results
