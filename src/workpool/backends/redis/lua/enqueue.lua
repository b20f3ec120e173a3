-- enqueue: store a batch of new runs in one atomic step (Backend.enqueue).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2..] RUN_FIELDS values per run (see library/enqueueing.lua)
--
-- Returns a flat array with two entries per run that was NOT created, in input order:
--   its position in the batch (1-based), the id of the run already stored
--   (the earlier run holding its idempotency key, the debounced run it collapsed into,
--   or itself if its id exists);
-- or an error reply, writing nothing, if a number is bad (arguments.lua)

local now, refused = ARGV[1], bad_now()
for position = 1, (#ARGV - 1) / RUN_FIELDS do
  refused = refused or bad_new_run(2 + (position - 1) * RUN_FIELDS)
end
if refused then return refused end
local runs, ids = (#ARGV - 1) / RUN_FIELDS, {}
for position = 1, runs do ids[position] = ARGV[2 + (position - 1) * RUN_FIELDS] end
note_absent(ids)
local not_created = {}
for position = 1, runs do
  local parsed = run_from_args(2 + (position - 1) * RUN_FIELDS)
  local existing, to_wake = enqueue_one(parsed, now)
  if existing == nil then  -- stored
    if to_wake then
      wake(parsed[1].queue, parsed[1].workflow)  -- a gate wakes the pair of each run it admits
    end
  else
    not_created[#not_created + 1] = position
    not_created[#not_created + 1] = existing
  end
end
return not_created
