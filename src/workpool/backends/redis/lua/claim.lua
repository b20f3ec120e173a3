-- claim: promote due runs, reap expired leases, expire deadlines, claim (Backend.claim).
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  now, seconds since the epoch (decimal string)
-- ARGV[2]  lease expiry of claimed runs: now + lease seconds (decimal string)
-- ARGV[3]  worker id (part of each lease token)
-- ARGV[4]  limit: most runs to claim (integer)
-- ARGV[5]  max lease losses: a reaped run that reaches it ends failed (integer)
-- ARGV[6]  alone: '1' when the worker holds no run (it may take a run to isolate), '0'
-- ARGV[7]  n, how many workflow names follow (-1: none follow, every workflow is served)
-- ARGV[8 .. 7+n]  the workflows the worker defines
-- ARGV[8+n ..]    queue names, in claim priority order
--
-- Returns { next_wake_at or nil, isolated_since or nil, set aside, claimed run, ... }:
--   next_wake_at  the earliest scheduled time, lease expiry or deadline of these queues
--   isolated_since  the earliest available_at of runs to isolate of the served
--                   workflows that this claim left (decimal string)
--   set aside  flat { run id, problem, ... }: runs set aside as corrupt (by this call or
--              any script since) that no claim reported yet (corrupt.lua), up to 100
--   each claimed run  as library/starting.lua describes it
-- Promotion (of 'scheduled' members: scheduled runs and suspended runs with a timer),
-- reaping (library/reaping.lua) and expiry (library/deadlines.lua) each handle at most
-- BATCH runs per call, oldest first, paused queues too, whatever their workflows.
-- Runs they queue reserve a start if rate limited (unless promoted at the start they
-- reserved), then go through their gate if gated: ready sets hold admitted runs only.
-- Taking reads only the ready sets of the served workflows (ready.lua), oldest
-- available_at first across them, and stops at the queue's room (queues.lua). A worker
-- that holds nothing takes one run to isolate if there is one, and nothing else. A
-- queue with room and claimable runs of served workflows left wakes their pairs for
-- another worker, so a full or paused queue never does, nor a run nobody serves.
local BATCH = 1000
local now, lease_expires_at, worker_id = ARGV[1], ARGV[2], ARGV[3]
local limit, max_lease_losses = tonumber(ARGV[4]), tonumber(ARGV[5])
local alone, served_count = ARGV[6] == '1', tonumber(ARGV[7])
local claim = { now = now, lease_expires_at = lease_expires_at, worker_id = worker_id }
local first_queue = 8
if served_count >= 0 then
  claim.served = { unpack(ARGV, 8, 7 + served_count) }
  first_queue = 8 + served_count
end
local queues = { unpack(ARGV, first_queue) }

local promote_budget, reap_budget, expire_budget = BATCH, BATCH, BATCH
local firsts = {}  -- queue -> { scheduled =, leases =, deadlines = read_first }
for _, queue in ipairs(queues) do  -- a full or paused queue wakes nobody
  local first = { scheduled = read_first(queue_key(queue, 'scheduled')),
    leases = read_first(queue_key(queue, 'leases')),
    deadlines = read_first(queue_key(queue, 'deadlines')) }
  firsts[queue] = first
  if due(first.scheduled, now) and promote_budget > 0 then
    promote_budget = promote(queue, promote_budget, now)
  end
  if due(first.leases, now) and reap_budget > 0 then
    local reaped = {}
    reap_budget = reap(queue, reap_budget, now, max_lease_losses, reaped)
    if next(reaped) and room_now(queue) > 0 then
      for workflow in pairs(reaped) do wake(queue, workflow) end
    end
  end
  if expire_budget > 0 and (due(first.deadlines, now) or due(first.leases, now)) then
    expire_budget = expire_deadlines(queue, expire_budget, now)  -- (a reaped run may be past it)
  end
end

-- reply[1..3]: next_wake_at, isolated_since, runs set aside, set below; claimed runs follow.
local reply, next_wake_at, isolating = { false, false, false }, nil, false
local heads, started = {}, {}  -- queue -> heads_of (while unchanged), runs started
if alone and limit > 0 then
  for _, queue in ipairs(queues) do
    heads[queue] = heads_of(claim, queue)
    local took, popped = false, false
    if room_now(queue) > 0 then took, popped = take_isolated(claim, queue, heads[queue], reply) end
    if took then
      isolating, started[queue] = true, 1
      break
    end
    if popped then heads[queue] = nil end  -- it set a corrupt run aside: read them again
  end
end
for _, queue in ipairs(queues) do
  if not isolating then
    local free = room_now(queue)
    local wanted = math.min(limit - (#reply - 3), free)
    local taken, left = take(claim, queue, heads[queue] or heads_of(claim, queue),
      math.max(wanted, 0), reply)
    started[queue], heads[queue] = taken, nil
    if free > taken then
      for workflow in pairs(left) do wake(queue, workflow) end
    end
  end
  local first = firsts[queue]
  next_wake_at = earliest_since(queue_key(queue, 'leases'), first.leases, lease_expires_at,
    started[queue] or 0, next_wake_at)
  for _, index in ipairs({ 'scheduled', 'deadlines' }) do
    next_wake_at = earliest_since(queue_key(queue, index), first[index], nil, 0, next_wake_at)
  end
end
reply[1] = next_wake_at or false
reply[2] = claim.isolated_since and string.format('%.17g', claim.isolated_since) or false
reply[3] = corrupt_reports()
return reply
