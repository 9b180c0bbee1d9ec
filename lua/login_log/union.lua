#!lua
--- OR day bitmaps of user ids into a temporary key, return the result and delete the key
-- KEYS[1] tmp: a temporary key (same hash tag as the bitmaps), deleted before the script returns
-- KEYS[2..] bitmaps: the day bitmaps to combine (missing ones count as empty)
-- RETURNS bulk: the OR of the bitmaps (bit uid set when the user is in any of them); nil when all are empty
if #KEYS < 2 then
  return nil
end
local bitmaps = {}
for i = 2, #KEYS do
  bitmaps[#bitmaps + 1] = KEYS[i]
end
if redis.call('BITOP', 'OR', KEYS[1], unpack(bitmaps)) == 0 then
  return nil
end
local out = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1])
return out
