#!lua flags=no-writes
--- The time to live of one entry of an expiring map, as PTTL answers for a key
-- KEYS[1] shard hash ro: the field's shard of an expiring map
-- ARGV[1] field bytes: the field
-- RETURNS integer: the milliseconds left, -1 for a live entry without expiry, -2 for no live entry
-- READS HGET TIME
-- INCLUDE expiry
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  return -2
end
local now = expiry_now()
local at = expiry_at(stored)
if not expiry_live(at, now) then
  return -2
end
if at == 0 then
  return -1
end
return at - now
