-- fail_unserved: fail the claimable runs of a pair no worker serves that became
-- available before a cutoff (Backend.fail_unserved).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  queue
-- ARGV[3]  workflow
-- ARGV[4]  available_before: only runs available before it (decimal string)
-- ARGV[5]  limit (integer)
-- ARGV[6]  the error JSON text stored on each
--
-- Returns how many runs ended failed (hooks fire, gates admit, parents hear of it). A
-- run whose record is corrupt is set aside instead (checks.lua).
-- Ready scores are ranks, not times (ready.lua): it reads the pair's ready set in claim
-- order, a page at a time, and keeps the runs whose available_at is before the cutoff,
-- so it also reads the later runs of higher priority that stand before them.

local now, queue, workflow, before = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local limit, error_json = tonumber(ARGV[5]), ARGV[6]
local key, ids, start, page = ready_key(queue, workflow), {}, 0, math.max(limit, 100)
local batch, corrupt = nil, {}
flush_key(key)
repeat
  batch = redis.call('ZRANGE', key, start, start + page - 1)
  for _, run_id in ipairs(batch) do
    local problem, run = nil, nil
    if #ids < limit then problem, run = run_problem(run_id) end
    if problem then
      corrupt[#corrupt + 1] = { run_id, problem, run }
    elseif run and tonumber(run.available_at) < before then
      ids[#ids + 1] = run_id
    end
  end
  start = start + page
until #ids >= limit or #batch < page
for _, bad in ipairs(corrupt) do set_aside(bad[1], bad[2], bad[3], queue, workflow) end
for _, run_id in ipairs(ids) do
  end_run(run_id, read_run(run_id), 'failed', now, { 'error', error_json })
end
wake_left_queues()
return #ids
