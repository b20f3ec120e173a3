-- Library: key names, prepended to every operation script (see scripts.py).
-- KEYS[1] is the hash tag "{<prefix>}"; every key starts with it, so all of them
-- live in one Redis Cluster slot. Mirrors keys.py, which documents the layout.
local prefix = KEYS[1]

local function run_key(run_id)
  return prefix .. ':run:' .. run_id
end

-- index: 'ready' | 'scheduled' | 'leases' | 'signal'
local function queue_key(queue, index)
  return prefix .. ':queue:' .. queue .. ':' .. index
end

-- set: the name of every workflow that has had a run (cancel_many walks them)
local function workflows_key()
  return prefix .. ':workflows'
end

local function workflow_cancelable_key(workflow)
  return prefix .. ':workflow:' .. workflow .. ':cancelable'
end

-- The workflow's length keeps (workflow, key) pairs apart when either holds a ':'.
local function idempotency_key(workflow, key)
  return prefix .. ':idempotency:' .. #workflow .. ':' .. workflow .. ':' .. key
end
