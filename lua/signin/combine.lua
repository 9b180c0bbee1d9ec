#!lua
--- Combine day bitmaps with OR (signed in on any day) or AND (on every day) and return the result
-- KEYS[1] tmp string rw: a temporary key (same hash tag as the day bitmaps), deleted before the script returns
-- KEYS[2..] days string ro: the day bitmaps of the range (a missing day is an empty bitmap)
-- ARGV[1] op enum OR|AND: how to combine them
-- RETURNS bulk: the combined bitmap (bit uid set when the user qualifies); nil when it is empty
-- WRITES BITOP DEL
-- READS GET
-- ERRORS BADARG
-- IDEMPOTENT yes: the temporary key is deleted before the script returns; the day bitmaps are only read
if #KEYS < 2 then
  return redis.error_reply('BADARG days at least one day bitmap is needed')
end
local days = {}
for i = 2, #KEYS do
  days[#days + 1] = KEYS[i]
end
if redis.call('BITOP', ARGV[1], KEYS[1], unpack(days)) == 0 then
  return nil
end
local out = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1])
return out
