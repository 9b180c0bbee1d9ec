#!lua
--- Give one live entry of an expiring map a new time to live, or none (persist), as HPEXPIRE / HPERSIST answer
-- KEYS[1] shard hash rw: the field's shard of an expiring map
-- ARGV[1] field bytes: the field
-- ARGV[2] ttl_ms integer 0..999999999999999: the new time to live in milliseconds; 0 removes the expiry
-- RETURNS integer: 1 when set, -1 when ttl_ms is 0 and the entry had no expiry, -2 for no live entry
-- WRITES HSET
-- READS HGET TIME
-- INCLUDE expiry
-- IDEMPOTENT yes: a second run sets the same time to live again from its own moment (for ttl_ms 0: answers -1)
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  return -2
end
local now = expiry_now()
local at, value = expiry_split(stored)
if not expiry_live(at, now) then
  return -2
end
local ttl = tonumber(ARGV[2])
if ttl == 0 and at == 0 then
  return -1
end
local new = 0
if ttl > 0 then
  new = now + ttl
end
redis.call('HSET', KEYS[1], ARGV[1], expiry_join(new, value))
return 1
