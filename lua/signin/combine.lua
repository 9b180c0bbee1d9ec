#!lua
--- Combine day bitmaps with OR (signed in on any day) or AND (on every day) and return the result
-- KEYS[1] tmp string rw: a temporary key (same hash tag as the day bitmaps), deleted before the script returns
-- KEYS[2..] days string ro: the day bitmaps of the range (a missing day is an empty bitmap)
-- ARGV[1] op enum OR|AND: how to combine them
-- RETURNS bulk: the combined bitmap (bit uid set when the user qualifies); nil when it is empty
-- WRITES BITOP GETDEL
-- ERRORS BADARG
-- INCLUDE bitop_days
-- IDEMPOTENT yes: the temporary key is deleted before the script returns; the day bitmaps are only read
local refused, bytes = bitop_days(ARGV[1], KEYS)
if refused or bytes == 0 then
  -- Refused (no day), or nil: BITOP left no key.
  return refused
end
return redis.call('GETDEL', KEYS[1])
