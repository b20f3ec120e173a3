-- Library: batches (Backend docstring, "Batches"). A batch's hash counts its runs by
-- outcome; each of its runs has the field batch. end_run counts a run of a batch when it
-- ends, and completes the batch if that was its last run.
--
-- Everything is made by batches() on the first use in a script call, not at the top:
-- every top-level function costs each call of a script that holds it its closure
-- (sources.py), and most calls of claim and finish end no run of a batch.

local batches_made

-- The batch functions and keys (see keys.py): key, a hash (created_at, total, succeeded,
-- failed, canceled, open '1' | '0', callback (JSON text of its hook), completed_at,
-- callback_run_id); failed_key, a list of its first failed run ids; cancelable_key, a
-- sorted set (every score 0, so by id) of its unfinished runs without a cancel request;
-- completed_key, completed batch ids by completed_at. FIELDS: what its runs' ends read,
-- batch[1..7].
local function batches()
  if batches_made then return batches_made end
  local MOST_FAILED_IDS = 1000  -- MAX_FAILED_IDS of backends/contract/batches.py
  local b = { FIELDS = { 'total', 'succeeded', 'failed', 'canceled', 'open', 'callback',
    'completed_at' } }
  function b.key(batch_id) return prefix .. ':batch:' .. batch_id end
  function b.failed_key(batch_id) return b.key(batch_id) .. ':failed' end
  function b.cancelable_key(batch_id) return b.key(batch_id) .. ':cancelable' end
  function b.completed_key() return prefix .. ':batches:completed' end

  -- The input of a batch's callback run (NewBatch); batch: its FIELDS values.
  local function input(batch_id, context, batch, failed_ids)
    local ids = #failed_ids > 0 and cjson.encode(failed_ids) or '[]'
    return '{"batch_id":' .. cjson.encode(batch_id) .. ',"context":' .. context
      .. ',"total":' .. batch[1] .. ',"succeeded":' .. batch[2] .. ',"failed":' .. batch[3]
      .. ',"canceled":' .. batch[4] .. ',"failed_run_ids":' .. ids .. '}'
  end

  -- Complete a batch at now: note when, and enqueue its callback (if it has one) as the
  -- run "<batch id>-complete".
  local function complete(batch_id, batch, now)
    redis.call('ZADD', b.completed_key(), now, batch_id)
    if not batch[6] then
      redis.call('HSET', b.key(batch_id), 'completed_at', now)
      return
    end
    local run_id = batch_id .. '-complete'
    redis.call('HSET', b.key(batch_id), 'completed_at', now, 'callback_run_id', run_id)
    local callback = cjson.decode(batch[6])
    local failed = redis.call('LRANGE', b.failed_key(batch_id), 0, -1)
    store_hook_run(run_id, callback, input(batch_id, callback.context, batch, failed), now)
  end

  -- Complete the batch if it is closed, none of its runs is unfinished and it has not
  -- completed before. batch: its FIELDS values.
  function b.complete_if_done(batch_id, batch, now)
    local ended = tonumber(batch[2]) + tonumber(batch[3]) + tonumber(batch[4])
    if batch[5] == '0' and not batch[7] and ended >= tonumber(batch[1]) then
      complete(batch_id, batch, now)
    end
  end

  -- A run of the batch ended in status (end_run): count it, keep its id if it is among
  -- the first MOST_FAILED_IDS to fail, drop it from the batch's cancelable runs, and
  -- complete the batch if it is done.
  function b.run_ended(batch_id, run_id, status, now)
    local batch = redis.call('HMGET', b.key(batch_id), unpack(b.FIELDS))
    if not batch[1] then
      return  -- no such batch (a batch is purged only once every run of it ended)
    end
    local index = (status == 'succeeded' and 2) or (status == 'failed' and 3) or 4
    batch[index] = tostring(tonumber(batch[index]) + 1)
    redis.call('HSET', b.key(batch_id), status, batch[index])
    zrem_later(b.cancelable_key(batch_id), run_id)
    if status == 'failed' and tonumber(batch[3]) <= MOST_FAILED_IDS then
      redis.call('RPUSH', b.failed_key(batch_id), run_id)
    end
    b.complete_if_done(batch_id, batch, now)
  end

  batches_made = b
  return b
end
