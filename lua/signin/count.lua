#!lua
--- Count the users in the OR (signed in on any day) or AND (on every day) of day bitmaps, without returning the bitmap
-- KEYS[1] tmp string rw: a temporary key (same hash tag as the day bitmaps), deleted before the script returns
-- KEYS[2..] days string ro: the day bitmaps of the range (a missing day is an empty bitmap)
-- ARGV[1] op enum OR|AND: how to combine them
-- RETURNS integer: the number of bits set in the combined bitmap (BITCOUNT)
-- WRITES BITOP DEL
-- READS BITCOUNT
-- ERRORS BADARG
-- INCLUDE bitop_days
-- IDEMPOTENT yes: the temporary key is deleted before the script returns; the day bitmaps are only read
local refused, bytes = bitop_days(ARGV[1], KEYS)
if refused then
  return refused
end
if bytes == 0 then
  return 0
end
local n = redis.call('BITCOUNT', KEYS[1])
redis.call('DEL', KEYS[1])
return n
