-- Library: sorted-set writes gathered during a script call and written together, one ZADD
-- and one ZREM per key, so a batch of n runs costs each index it touches one command,
-- not n. Every operation script ends with flush_deferred() (scripts.py).
--
-- The index sorted sets (ready, heads, scheduled, leases, the list indexes, cancelable,
-- finished) are written only through zadd_later, zadd_lt_later and zrem_later. Code
-- that reads one of them, or writes it directly (a reply it needs: ZREM's, ZPOPMIN's),
-- calls flush_key(key) first, so it sees every write made before in the same call.
-- For each member only its last pending write counts: adds and removals are set
-- assignments, so the result is the same as writing each at once, in order.

local MOST_PER_COMMAND = 1000  -- members per ZADD or ZREM: a bounded argument list

local pending = {}        -- key -> member -> score (a decimal string), or false: remove
local pending_lower = {}  -- key -> member -> score: ZADD LT (only lowers a score)
local pending_keys = {}   -- keys with pending writes, in the order first written
local writes = {}         -- key -> how many writes to it were deferred in this call

local function note(key, table_of)
  writes[key] = (writes[key] or 0) + 1
  local members = table_of[key]
  if not members then
    members = {}
    table_of[key] = members
    pending_keys[#pending_keys + 1] = key
  end
  return members
end

-- ZADD key score member, later.
local function zadd_later(key, score, member)
  note(key, pending)[member] = score
end

-- ZREM key member, later.
local function zrem_later(key, member)
  note(key, pending)[member] = false
end

-- ZADD key LT score member, later (the lowest score given wins). A key written this
-- way gets no zadd_later or zrem_later in the same call before it is flushed.
local function zadd_lt_later(key, score, member)
  local members = note(key, pending_lower)
  local before = members[member]
  if not before or tonumber(score) < tonumber(before) then members[member] = score end
end

-- The members of a pending table: { score, member, ... } to add and { member, ... } to
-- remove (lower: every entry is an add).
local function split_pending(members)
  local added, removed = {}, {}
  for member, score in pairs(members) do
    if score then
      added[#added + 1] = score
      added[#added + 1] = member
    else
      removed[#removed + 1] = member
    end
  end
  return added, removed
end

-- Write what is pending for key now, at most MOST_PER_COMMAND members per command.
local function flush_key(key)
  local members, lower = pending[key], pending_lower[key]
  if members then
    pending[key] = nil
    local added, removed = split_pending(members)
    for first = 1, #removed, MOST_PER_COMMAND do
      redis.call('ZREM', key, unpack(removed, first,
        math.min(first + MOST_PER_COMMAND - 1, #removed)))
    end
    for first = 1, #added, 2 * MOST_PER_COMMAND do
      redis.call('ZADD', key, unpack(added, first,
        math.min(first + 2 * MOST_PER_COMMAND - 1, #added)))
    end
  end
  if lower then
    pending_lower[key] = nil
    local added = split_pending(lower)
    for first = 1, #added, 2 * MOST_PER_COMMAND do
      redis.call('ZADD', key, 'LT', unpack(added, first,
        math.min(first + 2 * MOST_PER_COMMAND - 1, #added)))
    end
  end
end

-- How many writes to key were deferred so far in this call (a reader that keeps what
-- it read compares two of these to tell whether the key changed since).
local function writes_to(key)
  return writes[key] or 0
end

-- Write everything still pending (the last thing every operation script does).
local function flush_deferred()
  for _, key in ipairs(pending_keys) do
    flush_key(key)
  end
  pending_keys = {}
end
