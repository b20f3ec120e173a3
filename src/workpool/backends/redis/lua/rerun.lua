-- rerun: enqueue a failed or canceled run again as a new, linked run (Backend.rerun).
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  the run's id
-- ARGV[3]  the new run's id
--
-- Returns { status } or { status, run id } as rerun_one (rerunning.lua) returns them; an
-- error reply 'CORRUPT ...' for a run whose record is corrupt (set aside: checks.lua).

local now, run_id, new_id = ARGV[1], ARGV[2], ARGV[3]
local status, detail = rerun_one(run_id, new_id, now)
if status == 'corrupt' then
  return corrupt_reply(run_id, detail)
end
return { status, detail }
