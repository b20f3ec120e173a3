-- Library: batches (Backend docstring, "Batches"). A batch's hash (batch_key, keys.lua)
-- counts its runs by outcome; each of its runs has the field batch. end_run counts a run
-- of a batch here when it ends, and completes the batch if that was its last run.

local MOST_FAILED_IDS = 1000  -- MAX_FAILED_IDS of backends/values.py

-- Keys (see keys.py): batch_key, a hash (created_at, total, succeeded, failed, canceled,
-- open '1' | '0', callback (JSON text of its hook), completed_at, callback_run_id);
-- batch_failed_key, a list of its first failed run ids; batch_cancelable_key, a sorted
-- set (every score 0, so by id) of its unfinished runs without a cancel request;
-- batches_completed_key, completed batch ids by completed_at.
local function batch_key(batch_id) return prefix .. ':batch:' .. batch_id end
local function batch_failed_key(batch_id) return prefix .. ':batch:' .. batch_id .. ':failed' end
local function batch_cancelable_key(batch_id)
  return prefix .. ':batch:' .. batch_id .. ':cancelable'
end
local function batches_completed_key() return prefix .. ':batches:completed' end

-- The fields of a batch that its runs' ends read: batch[1..7].
local BATCH_FIELDS = { 'total', 'succeeded', 'failed', 'canceled', 'open', 'callback',
  'completed_at' }

-- The input of a batch's callback run (NewBatch); batch: its BATCH_FIELDS values.
local function batch_input(batch_id, context, batch, failed_ids)
  local ids = #failed_ids > 0 and cjson.encode(failed_ids) or '[]'
  return '{"batch_id":' .. cjson.encode(batch_id) .. ',"context":' .. context
    .. ',"total":' .. batch[1] .. ',"succeeded":' .. batch[2] .. ',"failed":' .. batch[3]
    .. ',"canceled":' .. batch[4] .. ',"failed_run_ids":' .. ids .. '}'
end

-- Complete a batch at now: note when, and enqueue its callback (if it has one) as the
-- run "<batch id>-complete". batch: its BATCH_FIELDS values.
local function complete_batch(batch_id, batch, now)
  local key = batch_key(batch_id)
  redis.call('ZADD', batches_completed_key(), now, batch_id)
  if not batch[6] then
    redis.call('HSET', key, 'completed_at', now)
    return
  end
  local run_id = batch_id .. '-complete'
  redis.call('HSET', key, 'completed_at', now, 'callback_run_id', run_id)
  local callback = cjson.decode(batch[6])
  local failed = redis.call('LRANGE', batch_failed_key(batch_id), 0, -1)
  store_hook_run(run_id, callback, batch_input(batch_id, callback.context, batch, failed), now)
end

-- Complete the batch if it is closed, none of its runs is unfinished and it has not
-- completed before. batch: its BATCH_FIELDS values.
local function complete_if_done(batch_id, batch, now)
  local ended = tonumber(batch[2]) + tonumber(batch[3]) + tonumber(batch[4])
  if batch[5] == '0' and not batch[7] and ended >= tonumber(batch[1]) then
    complete_batch(batch_id, batch, now)
  end
end

-- A run of the batch ended in status (end_run): count it, keep its id if it is among the
-- first MOST_FAILED_IDS to fail, drop it from the batch's cancelable runs, and complete
-- the batch if it is done.
local function batch_run_ended(batch_id, run_id, status, now)
  local key = batch_key(batch_id)
  local batch = redis.call('HMGET', key, unpack(BATCH_FIELDS))
  if not batch[1] then
    return  -- no such batch (a batch is purged only once every run of it ended)
  end
  local index = (status == 'succeeded' and 2) or (status == 'failed' and 3) or 4
  batch[index] = tostring(tonumber(batch[index]) + 1)
  redis.call('HSET', key, status, batch[index])
  zrem_later(batch_cancelable_key(batch_id), run_id)
  if status == 'failed' and tonumber(batch[3]) <= MOST_FAILED_IDS then
    redis.call('RPUSH', batch_failed_key(batch_id), run_id)
  end
  complete_if_done(batch_id, batch, now)
end
