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
-- Returns the page's run hashes (HGETALL replies), by id descending. Reads at most
-- limit ids from each list index (listing.lua) of the pairs and statuses the filters
-- match, then merges them: the cost grows with the pairs, not with the runs stored.

local STATUSES = { 'scheduled', 'queued', 'running', 'suspended', 'needs_attention',
  'succeeded', 'failed', 'canceled' }
local function given(argument)
  if argument == '' then
    return nil
  end
  return string.sub(argument, 2)
end
local limit, cursor = tonumber(ARGV[1]), given(ARGV[2])
local status, workflow, queue = given(ARGV[3]), given(ARGV[4]), given(ARGV[5])

-- Whether id a sorts after id b byte by byte, as Redis orders members (Lua's own
-- string comparison follows the server's collation locale).
local function after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return #a > #b
end

-- The pairs the queue and workflow filters match.
local function matching_pairs()
  if queue and workflow then
    return { pair_of(queue, workflow) }
  end
  local matching = {}
  for _, pair in ipairs(redis.call('SMEMBERS', pairs_key())) do
    local colon = string.find(pair, ':', 1, true)
    local length = tonumber(string.sub(pair, 1, colon - 1))
    local its_queue = string.sub(pair, colon + 1, colon + length)
    local its_workflow = string.sub(pair, colon + length + 2)
    if (not queue or queue == its_queue) and (not workflow or workflow == its_workflow) then
      matching[#matching + 1] = pair
    end
  end
  return matching
end

-- Up to limit ids below the cursor from each matching index, each list by id descending.
local statuses = status and { status } or STATUSES
local max = cursor and '(' .. cursor or '+'
local lists = {}
for _, pair in ipairs(matching_pairs()) do
  for _, each in ipairs(statuses) do
    local ids = redis.call('ZREVRANGEBYLEX', list_key(each, pair), max, '-', 'LIMIT', 0, limit)
    if #ids > 0 then
      lists[#lists + 1] = { ids = ids, next = 1 }
    end
  end
end

-- Merge: take the greatest head of the lists, limit times at most.
local page = {}
while #page < limit do
  local best = nil
  for _, list in ipairs(lists) do
    local head = list.ids[list.next]
    if head and (not best or after(head, best.ids[best.next])) then
      best = list
    end
  end
  if not best then
    break
  end
  local fields = redis.pcall('HGETALL', run_key(best.ids[best.next]))
  page[#page + 1] = fields.err and { 'id', best.ids[best.next] } or fields
  best.next = best.next + 1
end
return page
