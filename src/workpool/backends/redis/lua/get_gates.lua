-- get_gates: the gates whose id starts with a prefix, with their admitted and waiting
-- runs (Backend.get_gates). Reads only.
--
-- KEYS[1]  the key prefix hash tag, "{<prefix>}"
-- ARGV[1]  the gate id prefix
--
-- Returns a flat list: per gate with a place held (a gate with waiting runs is full, so
-- it holds places), its id, admitted count and the size of its waiting set. The cost
-- grows with the gates holding places, not with the runs stored.

local reply, wanted = {}, ARGV[1]
local counts = redis.call('HGETALL', gates_key())
for i = 1, #counts, 2 do
  local gate = counts[i]
  if string.sub(gate, 1, #wanted) == wanted then
    reply[#reply + 1] = gate
    reply[#reply + 1] = counts[i + 1]
    reply[#reply + 1] = redis.call('ZCARD', gate_waiting_key(gate))
  end
end
return reply
