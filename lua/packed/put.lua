#!lua
--- Write fixed-width records into one shard string, first growing it to its full length exactly
-- KEYS[1] shard string rw: one shard of packed records (a STRING); the only key touched
-- ARGV[1] reserve integer 0..536870912: when the shard is shorter, grow it to this many bytes (zero-filled) in
--    one exactly sized SET before writing, so later SETRANGEs never over-allocate; 0 grows as written
-- ARGV[2..] items bytes: byte offset, record, byte offset, record, ...
-- RETURNS integer: the number of records written
-- WRITES SET SETRANGE
-- READS GET GETBIT INFO STRLEN
-- ERRORS BADARG MAXMEMORY
-- INCLUDE shard
-- IDEMPOTENT yes: the same records are written at the same offsets again
local max = 536870912
local n = #ARGV - 1
if n == 0 or n % 2 ~= 0 then
  return redis.error_reply('BADARG items must be a non-empty list of offset, record')
end
for i = 2, #ARGV, 2 do
  local off = ARGV[i]
  if not (off == '0' or string.find(off, '^[1-9]%d*$')) or #off > 9 or tonumber(off) + #ARGV[i + 1] > max then
    return redis.error_reply('BADARG items offset ' .. string.sub(off, 1, 40) .. ' is not an integer with offset + width <= 536870912')
  end
end
-- The end of the farthest record.
local farthest = 0
for i = 2, #ARGV, 2 do
  farthest = math.max(farthest, tonumber(ARGV[i]) + #ARGV[i + 1])
end
-- Within the server's string limit (a SETRANGE beyond it would fail after
-- the first write) and maxmemory, grown to the reserve
-- (lua/includes/shard.lua).
local refused = shard_room(KEYS[1], tonumber(ARGV[1]), farthest, 'items')
if refused then
  return refused
end
for i = 2, #ARGV, 2 do
  redis.call('SETRANGE', KEYS[1], ARGV[i], ARGV[i + 1])
end
return n / 2
