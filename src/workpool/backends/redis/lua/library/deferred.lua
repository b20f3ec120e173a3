-- Library: sorted-set writes gathered during a script call and sent together, so a batch
-- of n runs costs each index it touches one command, not n. Every operation script ends
-- with flush_deferred() (sources.py).
--
-- The index sorted sets (ready, heads, scheduled, leases, the list indexes, cancelable,
-- finished) are written only through zadd_later, zadd_lt_later and zrem_later. Code
-- that reads one of them, or writes it directly (a reply it needs: ZREM's, ZPOPMIN's),
-- calls flush_key(key) first, so it sees every write made before in the same call.
-- Writes keep their order: a key's pending writes are all of one kind (ZADD, ZADD LT or
-- ZREM), and a write of another kind sends them first; one command takes them in order.

local MOST_PER_COMMAND = 1000  -- members per ZADD or ZREM: a bounded argument list

local pending = {}       -- key -> { kind, arguments... }: 'add' and 'lower' (ZADD, ZADD
                         -- LT) take score, member pairs; 'remove' (ZREM) takes members
local pending_keys = {}  -- every key written in this call, in the order first written
local writes = {}        -- key -> how many writes to it were deferred in this call

-- Send the writes pending for key now.
local function flush_key(key)
  local items = pending[key]
  if not items then return end
  pending[key] = nil
  local kind, last = items[1], #items
  local step = kind == 'remove' and MOST_PER_COMMAND or 2 * MOST_PER_COMMAND
  for first = 2, last, step do
    local upto = math.min(first + step - 1, last)
    if kind == 'remove' then
      redis.call('ZREM', key, unpack(items, first, upto))
    elseif kind == 'lower' then
      redis.call('ZADD', key, 'LT', unpack(items, first, upto))
    else
      redis.call('ZADD', key, unpack(items, first, upto))
    end
  end
end

local function defer(key, kind, first, second)
  local count = writes[key]
  writes[key] = (count or 0) + 1
  local items = pending[key]
  if items and items[1] ~= kind then
    flush_key(key)
    items = nil
  end
  if not items then
    items = { kind }
    pending[key] = items
    if not count then pending_keys[#pending_keys + 1] = key end
  end
  items[#items + 1] = first
  if second then items[#items + 1] = second end
end

-- ZADD key score member, later.
local function zadd_later(key, score, member)
  defer(key, 'add', score, member)
end

-- ZADD key LT score member, later (adds a new member; lowers an existing one's score).
local function zadd_lt_later(key, score, member)
  defer(key, 'lower', score, member)
end

-- ZREM key member, later.
local function zrem_later(key, member)
  defer(key, 'remove', member)
end

-- How many writes to key were deferred so far in this call (a reader that keeps what
-- it read compares two of these to tell whether the key changed since).
local function writes_to(key)
  return writes[key] or 0
end

-- Send everything still pending (the last thing every operation script does).
local function flush_deferred()
  for _, key in ipairs(pending_keys) do
    flush_key(key)
  end
end
