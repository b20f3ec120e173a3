-- Library: the keys of the events sent to a run and of the values it publishes (see
-- keys.py). A run's events of one key wait in a list until steps take them, oldest first.

-- list: the payloads of the events of key sent to the run and not yet taken, oldest first
local function inbox_key(run_id, key)
  return prefix .. ':run:' .. run_id .. ':inbox:' .. key
end

-- set: every key the run was sent events of (purge deletes their lists)
local function inbox_keys_key(run_id)
  return prefix .. ':run:' .. run_id .. ':inbox'
end

-- set: the event ids the run was sent (send_event's event_id; purge deletes it)
local function event_ids_key(run_id)
  return prefix .. ':run:' .. run_id .. ':event_ids'
end

-- hash: key -> the value the run published under it (set_event.lua)
local function published_key(run_id)
  return prefix .. ':run:' .. run_id .. ':published'
end
