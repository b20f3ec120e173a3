-- Library: promoting a queue's due scheduled runs (claim.lua, Backend.claim step 1), and
-- the first scores of its scheduled and leases sets, which a claim reads once: before
-- promoting and reaping, and again at its end only if the set changed meanwhile.

-- The first score of a sorted set (a decimal string, or nil) and how many deferred
-- writes it had had then (deferred.lua).
local function read_first(key)
  flush_key(key)
  return { score = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2], writes = writes_to(key) }
end

-- Whether a first score (read_first) is due at now (a decimal string).
local function due(first, now)
  return first.score ~= nil and tonumber(first.score) <= tonumber(now)
end

-- The earlier of best and the first score of key (both decimal strings or nil): first
-- (read_first) if key had no write since it was read but the added members (added:
-- how many, all scored at, a decimal string), else key read again.
local function earliest_since(key, first, at, added, best)
  if writes_to(key) ~= first.writes + added then return earliest(key, best) end
  local score = first.score
  if added > 0 and (score == nil or tonumber(at) < tonumber(score)) then score = at end
  if score and (best == nil or tonumber(score) < tonumber(best)) then return score end
  return best
end

local PROMOTED_FIELDS = { 'status', 'queue', 'workflow', 'available_at', 'gate',
  'gate_limit', 'rate', 'rate_reserved' }  -- read with the checks (run_problem)

-- Queue (or schedule again: rate limits, see waiting.lua) up to budget due runs of the
-- queue's scheduled set, oldest first: scheduled runs and suspended runs whose timer is
-- due; a corrupt one is set aside. Returns the budget left.
local function promote(queue, budget, now)
  local scheduled = queue_key(queue, 'scheduled')
  flush_key(scheduled)
  local ids = redis.call('ZRANGEBYSCORE', scheduled, '-inf', now, 'LIMIT', 0, budget)
  for _, run_id in ipairs(ids) do
    zrem_later(scheduled, run_id)
    local problem, checked, at = run_problem(run_id, PROMOTED_FIELDS)
    if problem then
      set_aside(run_id, problem, checked, queue)
    else
      if at[8] == '1' then redis.call('HDEL', run_key(run_id), 'rate_reserved') end  -- used
      if make_waiting(run_id, at, at[4], now, at[5], at[6], at[8] ~= '1' and at[7])
          and room_now(queue) > 0 then
        wake(at[2], at[3])
      end
    end
  end
  return budget - #ids
end
