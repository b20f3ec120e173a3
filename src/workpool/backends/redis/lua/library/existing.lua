-- Library: whether run ids are taken. enqueue.lua looks a whole batch up with one EXISTS
-- first; a run stored later in the same call takes its id out of absent_ids.

-- Run ids known to name no stored run (note_absent); an id leaves when its run is stored.
local absent_ids = {}

-- Note which of these run ids name no stored run, with one EXISTS per thousand ids: when
-- none of them exists each is known absent, else each is looked up when it is stored.
local function note_absent(ids)
  for first = 1, #ids, 1000 do
    local last, keys = math.min(first + 999, #ids), {}
    for i = first, last do keys[#keys + 1] = run_key(ids[i]) end
    if redis.call('EXISTS', unpack(keys)) == 0 then
      for i = first, last do absent_ids[ids[i]] = true end
    end
  end
end

-- Whether a run with this id is stored.
local function run_exists(run_id)
  return not absent_ids[run_id] and redis.call('EXISTS', run_key(run_id)) == 1
end
