-- purge: delete old terminal runs and old counters (Backend.purge).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  finished_before: delete runs that finished earlier (decimal string)
-- ARGV[2]  limit: most runs to delete (integer)
-- ARGV[3]  counters_before: delete the counters of minutes starting earlier (decimal)
-- ARGV[4]  hours_before: delete the counters of hours starting earlier (decimal)
--
-- Returns how many runs were deleted. Runs go oldest finished_at first (the finished
-- set), each as delete_run (deleting.lua) deletes it. Then up to limit batches
-- completed before finished_before go (hash, failed ids, cancelable set).

local finished_before, limit, counters_before = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local hours_before = ARGV[4]

local deleted = 0
if limit > 0 then
  local old = redis.call('ZRANGEBYSCORE', finished_key(), '-inf', '(' .. finished_before,
    'LIMIT', 0, limit)
  for _, run_id in ipairs(old) do
    if delete_run(run_id) then
      deleted = deleted + 1
    end
  end
end

if limit > 0 then
  local b = batches()
  local completed = redis.call('ZRANGEBYSCORE', b.completed_key(), '-inf',
    '(' .. finished_before, 'LIMIT', 0, limit)
  for _, batch_id in ipairs(completed) do
    redis.call('DEL', b.key(batch_id), b.failed_key(batch_id), b.cancelable_key(batch_id))
  end
  if #completed > 0 then
    redis.call('ZREM', b.completed_key(), unpack(completed))
  end
end

-- The hashes of the rows of index that start before a time, then their index entries.
local function delete_rows(index, row_key, before)
  local rows = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. before)
  for _, row in ipairs(rows) do
    redis.call('DEL', row_key(row))
  end
  if #rows > 0 then
    redis.call('ZREMRANGEBYSCORE', index, '-inf', '(' .. before)
  end
end

delete_rows(stats_minutes_key(), stats_key, counters_before)
delete_rows(hourly_hours_key(), hourly_key, hours_before)
return deleted
