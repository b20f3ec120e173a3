-- purge: delete old terminal runs and old counters (Backend.purge).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  finished_before: delete runs that finished earlier (decimal string)
-- ARGV[2]  limit: most runs to delete (integer)
-- ARGV[3]  counters_before: delete the counters of minutes starting earlier (decimal)
-- ARGV[4]  hours_before: delete the counters of hours starting earlier (decimal)
--
-- Returns how many runs were deleted. Runs go oldest finished_at first (the finished
-- set), each with its steps, its children list, its published values, its events not
-- taken (their lists, when its hash notes it has some, and its set of their keys), its
-- idempotency key if that still names it, its list entry and its finished entry;
-- terminal runs are in no other index. Runs it started and the run that started it are
-- left alone. Then up to limit batches completed before finished_before go (hash,
-- failed ids, cancelable set).

local finished_before, limit, counters_before = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local hours_before = ARGV[4]

local deleted = 0
if limit > 0 then
  local old = redis.call('ZRANGEBYSCORE', finished_key(), '-inf', '(' .. finished_before,
    'LIMIT', 0, limit)
  for _, run_id in ipairs(old) do
    local run = redis.pcall('HMGET', run_key(run_id), 'status', 'queue', 'workflow',
      'idempotency_key', 'inbox')
    if run.err then run = {} end  -- not a hash: its keys are deleted all the same
    if run[1] and run[2] and run[3] then
      zrem_later(list_key(run[1], pair_of(run[2], run[3])), run_id)
      if run[4] then
        local key = idempotency_key(run[3], run[4])
        local value = redis.call('GET', key)
        if value and string.sub(value, string.find(value, ' ', 1, true) + 1) == run_id then
          redis.call('DEL', key)
        end
      end
      if run[5] then
        for _, key in ipairs(redis.call('SMEMBERS', inbox_keys_key(run_id))) do
          redis.call('DEL', inbox_key(run_id, key))
        end
        redis.call('DEL', event_ids_key(run_id))
      end
    end
    redis.call('DEL', run_key(run_id), steps_key(run_id), children_key(run_id),
      published_key(run_id), inbox_keys_key(run_id))
    zrem_later(finished_key(), run_id)
    if run[1] then
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
