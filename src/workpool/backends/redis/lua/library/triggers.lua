-- Library: the keys of cron triggers (start_tick.lua, list_skipped_ticks.lua); see keys.py.

-- A cron trigger in key names and fields: "<len>:<workflow>:<trigger id>", <len> the
-- workflow name's length in bytes, so a ':' in either name cannot merge two triggers.
local function trigger_name(workflow, trigger_id)
  return #workflow .. ':' .. workflow .. ':' .. trigger_id
end

-- hash: trigger name -> the id of the run start_tick last created for it
local function trigger_runs_key() return prefix .. ':triggers:runs' end

-- list: the trigger's skipped ticks (JSON texts), newest first, trimmed (start_tick.lua)
local function skipped_ticks_key(trigger) return prefix .. ':trigger:' .. trigger .. ':skipped' end

-- sorted set: the name of every trigger with a skipped ticks list, score its last skip
local function skipped_triggers_key() return prefix .. ':triggers:skipped' end
