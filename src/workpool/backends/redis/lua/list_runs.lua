-- list_runs: one page of runs by id, newest first (Backend.list_runs). Reads only.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  limit: most runs in the page (integer, at least 1)
-- ARGV[2]  cursor: only runs with a smaller id
-- ARGV[3]  status
-- ARGV[4]  workflow
-- ARGV[5]  queue
-- ARGV[2..5] are '' when not given, else '=' followed by the value (so that an empty
-- name is still a name).
--
-- Returns the page's run hashes (HGETALL replies), by id descending, as listed_ids
-- (listing.lua) finds them: the cost grows with the pairs, not with the runs stored.

local function given(argument)
  if argument == '' then
    return nil
  end
  return string.sub(argument, 2)
end
local limit, cursor = tonumber(ARGV[1]), given(ARGV[2])
local status, workflow, queue = given(ARGV[3]), given(ARGV[4]), given(ARGV[5])

local statuses = status and { status } or LISTED_STATUSES
local page = {}
for _, run_id in ipairs(listed_ids(statuses, queue, workflow, cursor, limit)) do
  local fields = redis.pcall('HGETALL', run_key(run_id))
  page[#page + 1] = fields.err and { 'id', run_id } or fields
end
return page
