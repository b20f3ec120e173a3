-- fail_unserved: fail the oldest claimable runs of a pair no worker serves
-- (Backend.fail_unserved).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  queue
-- ARGV[3]  workflow
-- ARGV[4]  available_before: only runs available before it (decimal string)
-- ARGV[5]  limit (integer)
-- ARGV[6]  the error JSON text stored on each
--
-- Returns how many runs ended failed (hooks fire, gates admit, parents hear of it).

local now, queue, workflow, before = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local limit, error_json = tonumber(ARGV[5]), ARGV[6]
local key = ready_key(queue, workflow)
local isolated_before = string.format('%.17g', before - ISOLATED_OFFSET)
local ids = redis.call('ZRANGEBYSCORE', key, '-inf', '(' .. isolated_before, 'LIMIT', 0, limit)
if #ids < limit then
  local normal = redis.call('ZRANGEBYSCORE', key, ISOLATED_BELOW,
    '(' .. string.format('%.17g', before), 'LIMIT', 0, limit - #ids)
  for _, run_id in ipairs(normal) do ids[#ids + 1] = run_id end
end
for _, run_id in ipairs(ids) do
  end_run(run_id, read_run(run_id), 'failed', now, { 'error', error_json })
end
wake_left_queues()
return #ids
