#!lua
--- Count the users in the OR (signed in on any day) or AND (on every day) of day bitmaps, without returning the bitmap
-- KEYS[1] tmp string rw: a temporary key (same hash tag as the day bitmaps), deleted before the script returns
-- KEYS[2..] days string ro: the day bitmaps of the range (a missing day is an empty bitmap)
-- ARGV[1] op enum OR|AND: how to combine them
-- RETURNS integer: the number of bits set in the combined bitmap (BITCOUNT)
-- WRITES BITOP DEL
-- READS BITCOUNT
-- ERRORS BADARG
-- IDEMPOTENT yes: the temporary key is deleted before the script returns; the day bitmaps are only read
-- A missing day is an empty bitmap. BITOP checks every day's type before
-- it writes (the generated checks leave the days to it).
if #KEYS < 2 then
  return redis.error_reply('BADARG days at least one day bitmap is needed')
end
local bytes = redis.call('BITOP', ARGV[1], KEYS[1], unpack(KEYS, 2))
if bytes == 0 then
  return 0
end
local n = redis.call('BITCOUNT', KEYS[1])
redis.call('DEL', KEYS[1])
return n
