-- enqueue_batch: store runs with their batch, a new one or an open one, in one atomic
-- step (Backend.enqueue with batch ids; see library/batches.lua).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the batch id
-- ARGV[3]  'add': add the runs to the batch, which must exist and be open, or be closed
--          and added to by an unfinished run of its own; 'open' or 'closed': create the
--          batch so (it must not exist, unless it holds a run of this call: a repeat of
--          the call that created it, which then adds what is not stored yet)
-- ARGV[4]  'add': the id of the run of the batch that adds, or ''; 'open' or 'closed':
--          JSON text of its callback hook (see hooks.lua), or ''
-- ARGV[5..] RUN_FIELDS values per run (see library/enqueueing.lua)
--
-- Returns { 'not_found' } or { 'closed' } (adding), { 'exists' } (creating), writing
-- nothing; else 'stored' followed by what enqueue.lua returns: two entries per run not
-- created (its position, from 1, and the id of the run already stored). A new closed
-- batch whose runs were all found already completes at once. An error reply, writing
-- nothing, if a number is bad (arguments.lua).

local now, batch_id, mode, detail = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local runs, refused = (#ARGV - 4) / RUN_FIELDS, bad_now()
for position = 1, runs do
  refused = refused or bad_new_run(5 + (position - 1) * RUN_FIELDS)
end
if refused then return refused end
local b = batches()
local key = b.key(batch_id)
local open = redis.call('HGET', key, 'open')
-- Whether the run adding is a run of the batch that has not ended (it keeps it pending).
local function added_by_own_run()
  local adder = detail ~= '' and redis.pcall('HMGET', run_key(detail), 'status', 'batch')
  return adder and adder[2] == batch_id and not TERMINAL[adder[1]]
end
if mode == 'add' and not open then return { 'not_found' } end
if mode == 'add' and open ~= '1' and not added_by_own_run() then return { 'closed' } end
-- Whether a run of this call is stored in the batch: the call is a repeat of the one that
-- created it (sent again after its reply was lost), and goes on as an add.
local function holds_a_run_of_this_call()
  for position = 1, runs do
    local run_id = ARGV[5 + (position - 1) * RUN_FIELDS]
    if redis.call('HGET', run_key(run_id), 'batch') == batch_id then return true end
  end
  return false
end
if mode ~= 'add' and open then
  if not holds_a_run_of_this_call() then return { 'exists' } end
  mode = 'repeat'
end
local ids = {}
for position = 1, runs do ids[position] = ARGV[5 + (position - 1) * RUN_FIELDS] end
note_absent(ids)
local reply, created = { 'stored' }, 0
for position = 1, runs do
  local parsed = run_from_args(5 + (position - 1) * RUN_FIELDS)
  local run = parsed[1]
  run.batch = batch_id
  local existing, to_wake = enqueue_one(parsed, now)
  if existing == nil then
    created = created + 1
    zadd_later(b.cancelable_key(batch_id), 0, run.id)
    if to_wake then
      wake(run.queue, run.workflow)
    end
  else
    reply[#reply + 1] = position
    reply[#reply + 1] = existing
  end
end
if mode == 'add' or mode == 'repeat' then
  redis.call('HINCRBY', key, 'total', created)
  return reply
end
local batch = { tostring(created), '0', '0', '0', mode == 'open' and '1' or '0', false, false }
local fields = { 'created_at', now, 'total', batch[1], 'succeeded', '0', 'failed', '0',
  'canceled', '0', 'open', batch[5] }
if detail ~= '' then
  batch[6] = detail
  fields[#fields + 1], fields[#fields + 2] = 'callback', detail
end
redis.call('HSET', key, unpack(fields))
b.complete_if_done(batch_id, batch, now)
return reply
