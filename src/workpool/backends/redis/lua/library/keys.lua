-- Library: key names, for every operation script (see sources.py).
-- KEYS[1] is the hash tag "{<prefix>}"; every key starts with it, so all of them
-- live in one Redis Cluster slot. Mirrors keys.py, which documents the layout.
local prefix = KEYS[1]

local function run_key(run_id) return prefix .. ':run:' .. run_id end
-- hash: step name -> step JSON text
local function steps_key(run_id) return prefix .. ':run:' .. run_id .. ':steps' end
-- list: ids of the runs started by the run's steps, oldest first
local function children_key(run_id) return prefix .. ':run:' .. run_id .. ':children' end

-- index: 'ready' | 'scheduled' | 'leases' | 'signal' | 'settings'
local function queue_key(queue, index)
  return prefix .. ':queue:' .. queue .. ':' .. index
end

-- hash: max_parallelism (absent: no limit), paused ('1' | '0'); none: no settings
local function settings_key(queue) return queue_key(queue, 'settings') end

-- set: workflow names, written by versions before the pairs set named them all (only
-- cancel_many still reads it: the runs of a store written by those versions)
local function legacy_workflows_key() return prefix .. ':workflows' end

local function workflow_cancelable_key(workflow)
  return prefix .. ':workflow:' .. workflow .. ':cancelable'
end

-- string "<expires_at> <holder>" (decimal seconds, caller's clock), with a TTL too
local function lease_key(name) return prefix .. ':lease:' .. name end

-- The workflow's length keeps (workflow, key) pairs apart when either holds a ':'.
local function idempotency_key(workflow, key)
  return prefix .. ':idempotency:' .. #workflow .. ':' .. workflow .. ':' .. key
end

-- A gate's id: "<len>:<workflow>" without a concurrency key, "<len>:<workflow>:<key>"
-- with one (key_suffix: '' or ':' .. key, as enqueue arguments carry it), where <len>
-- is the workflow name's length in bytes, so no two (workflow, key) pairs share an id.
local function gate_id(workflow, key_suffix)
  return #workflow .. ':' .. workflow .. key_suffix
end

-- sorted set: the gate's waiting runs (queued, not admitted), score available_at
local function gate_waiting_key(gate) return prefix .. ':gate:' .. gate .. ':waiting' end

-- hash: gate id -> how many of its runs are admitted (absent when none)
local function gates_key() return prefix .. ':gates' end

-- string: a rate limiter's TAT (decimal seconds), with a TTL (see rates.lua)
local function limiter_key(limiter_id) return prefix .. ':limiter:' .. limiter_id end

-- hash: workflow name -> its registered definition (JSON text; see keys.py)
local function registry_key() return prefix .. ':registry' end

-- A (queue, workflow) pair in key names and fields: "<len>:<queue>:<workflow>", <len>
-- the queue name's length in bytes, so a ':' in either name cannot merge two pairs.
local pair_names = {}  -- queue -> workflow -> its pair name: each made once per call

local function pair_of(queue, workflow)
  local of_queue = pair_names[queue]
  if not of_queue then
    of_queue = {}
    pair_names[queue] = of_queue
  end
  local name = of_queue[workflow]
  if not name then
    name = #queue .. ':' .. queue .. ':' .. workflow
    of_queue[workflow] = name
  end
  return name
end

-- Listing (listing.lua): list_key, a sorted set (every score 0) of the pair's runs in
-- status, by id; pairs_key, a set of every pair that has had a run; finished_key, a
-- sorted set of terminal runs, score finished_at.
local function list_key(status, pair) return prefix .. ':list:' .. status .. ':' .. pair end
local function pairs_key() return prefix .. ':pairs' end
local function finished_key() return prefix .. ':finished' end

-- Failure groups (failures.lua): a hash of group (JSON [workflow, error type]) -> JSON
-- {c = count, f = first_seen, l = last_seen (decimal strings), e = example run id}.
local function failures_key() return prefix .. ':failures' end

-- Counters (counters.lua): stats_key, a hash of one minute's counters (minute: its
-- start, a whole number); stats_minutes_key, a sorted set of the minutes that have one;
-- hourly_key and hourly_hours_key, the same per hour.
local function stats_key(minute) return prefix .. ':stats:' .. minute end
local function stats_minutes_key() return prefix .. ':stats' end
local function hourly_key(hour) return prefix .. ':hourly:' .. hour end
local function hourly_hours_key() return prefix .. ':hourly' end

-- Workers (heartbeat.lua): workers_key, a hash of worker id -> JSON text of its record;
-- workers_expiry_key, a sorted set of worker ids scored by when each record expires.
local function workers_key() return prefix .. ':workers' end
local function workers_expiry_key() return prefix .. ':workers:expiry' end
