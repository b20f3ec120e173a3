-- Library: taking claimable runs for a worker (claim.lua, Backend.claim step 3).
--
-- A claim is a table { now, lease_expires_at, worker_id, served (the workflows the worker
-- defines; nil: all), isolated_since (set by take) }. Only the served workflows' ready
-- sets are read (ready.lua): oldest first across them, from one ZMSCORE of the heads.
-- Each run taken is leased with start (starting.lua).

-- The served workflows with claimable runs in the queue: workflow -> head score.
local function heads_of(claim, queue)
  local heads, served, key = {}, claim.served, heads_key(queue)
  flush_key(key)
  if served == nil then
    local flat = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    for i = 1, #flat, 2 do heads[flat[i]] = tonumber(flat[i + 1]) end
  elseif #served > 0 then
    local scores = redis.call('ZMSCORE', key, unpack(served))
    for i, workflow in ipairs(served) do
      if scores[i] then heads[workflow] = tonumber(scores[i]) end
    end
  end
  return heads
end

-- The lowest score of (queue, workflow) among runs not to isolate, or nil; head: the
-- lowest score of all its runs (nil: none).
local function normal_head(queue, workflow, head)
  if head == nil or head >= ISOLATED_BELOW then return head end
  local key = ready_key(queue, workflow)
  flush_key(key)
  local first = redis.call('ZRANGEBYSCORE', key, ISOLATED_BELOW, '+inf', 'LIMIT', 0, 1,
    'WITHSCORES')
  return first[2] and tonumber(first[2]) or nil
end

-- The workflow of lowest score in heads, that score, and the next lowest (or nil).
local function lowest(heads)
  local best, best_score, second = nil, nil, nil
  for workflow, score in pairs(heads) do
    if best_score == nil or score < best_score then
      second, best, best_score = best_score, workflow, score
    elseif second == nil or score < second then second = score end
  end
  return best, best_score, second
end

-- Take up to most runs not to isolate from the queue, smallest rank first across the
-- served workflows (heads: as heads_of gives them; the earliest available_at of the
-- first runs to isolate seen goes in claim.isolated_since). Returns how many it took
-- and the served workflows with runs not to isolate left (workflow -> score).
local function take(claim, queue, heads, most, reply)
  local normal = {}
  for workflow, score in pairs(heads) do
    local since = score < ISOLATED_BELOW and head_available_at(queue, workflow)
    if since and (claim.isolated_since == nil or since < claim.isolated_since) then
      claim.isolated_since = since
    end
    normal[workflow] = normal_head(queue, workflow, score)
  end
  local taken, firsts = 0, {}
  while taken < most do
    local workflow, _, second = lowest(normal)
    if workflow == nil then break end
    local ids, emptied = pop_ready(queue, workflow, most - taken, second,
      heads[workflow] >= ISOLATED_BELOW)
    for _, run_id in ipairs(ids) do
      if start(claim, run_id, queue, workflow, reply, false) then taken = taken + 1 end
    end
    local first = emptied and {} or ready_first(queue, workflow)
    firsts[workflow] = first
    normal[workflow] = #ids > 0 and normal_head(queue, workflow, tonumber(first[2])) or nil
  end
  for workflow, first in pairs(firsts) do store_head(queue, workflow, first) end
  return taken, normal
end

-- Take the oldest run to isolate of the queue, if any; returns whether it took one and
-- whether it took one out of its ready set (a corrupt one is set aside, not taken).
local function take_isolated(claim, queue, heads, reply)
  local workflow, score = lowest(heads)
  if workflow == nil or score >= ISOLATED_BELOW then return false end
  local key = ready_key(queue, workflow)
  flush_key(key)
  local run_id = redis.call('ZPOPMIN', key)[1]
  local started = start(claim, run_id, queue, workflow, reply, true)
  set_head(queue, workflow)
  return started, true
end
