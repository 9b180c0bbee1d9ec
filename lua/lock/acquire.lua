#!lua
--- Take the lock if it is free and return a new fencing token
-- KEYS[1] lock string rw: the lock; its value is the owner's token, its TTL the lease
-- KEYS[2] fence string rw: the lock's fencing counter (never expires)
-- ARGV[1] token string nonempty: the new owner's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the lease in milliseconds
-- RETURNS integer: > 0 when acquired: the fencing token, greater than any earlier one of this lock;
--    <= 0 when the lock is held: minus the holder's remaining lease in ms (0 when it has no TTL)
-- WRITES INCR SET
-- READS GET PTTL
-- IDEMPOTENT no: a resend finds the lock held by this very call and answers busy, so the caller
--    would not learn its token and fencing token

-- The fence is incremented before the lock is set: INCR is the one write
-- that can fail on what its key holds (a value that is no integer, the
-- int64 maximum), so it must come first.
if not redis.call('GET', KEYS[1]) then
  local fence = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return fence
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  return -pttl
end
return 0
