#!lua
--- Write fixed-width records into one shard string, first growing it to its full length exactly
-- KEYS[1] shard string rw: one shard of packed records (a STRING); the only key touched
-- ARGV[1] reserve integer 0..536870912: when the shard is shorter, grow it to this many bytes (zero-filled) in
--    one exactly sized SET before writing, so later SETRANGEs never over-allocate; 0 grows as written
-- ARGV[2..] items bytes: byte offset, record, byte offset, record, ...
-- RETURNS integer: the number of records written
-- WRITES SET SETRANGE
-- READS GET STRLEN
-- ERRORS BADARG
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
local cur = redis.call('STRLEN', KEYS[1])
local reserve = tonumber(ARGV[1])
if reserve > 0 and cur < reserve then
  local old = ''
  if cur > 0 then
    old = redis.call('GET', KEYS[1])
  end
  redis.call('SET', KEYS[1], old .. string.rep('\0', reserve - cur), 'KEEPTTL')
end
for i = 2, #ARGV, 2 do
  redis.call('SETRANGE', KEYS[1], ARGV[i], ARGV[i + 1])
end
return n / 2
