#!lua
--- Take the lock if it is free, or give its owner the same fencing token again, and return the fencing token
-- KEYS[1] lock string rw: the lock; its value is the owner's token, its TTL the lease
-- KEYS[2] fence string rw: the lock's fencing counter (never expires); while the lock is held it holds the holder's fencing token
-- ARGV[1] token string nonempty: the new owner's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the lease in milliseconds
-- RETURNS integer: > 0 when acquired: the fencing token, greater than any earlier one of this lock;
--    when the lock is already held with this token (a retry whose reply was lost): the same fencing token, with a fresh lease;
--    <= 0 when another owner holds it: minus the holder's remaining lease in ms (0 when it has no TTL)
-- WRITES INCR SET
-- READS GET PTTL
-- IDEMPOTENT yes: a resend with the same token finds the lock held by it and answers the same fencing token
--    with a fresh lease (after the lease ran out: a new fencing token, or busy when another owner took it)

-- The fence is incremented before the lock is set: INCR is the one write
-- that can fail on what its key holds (a value that is no integer, the
-- int64 maximum), so it must come first.
local owner = redis.call('GET', KEYS[1])
if not owner then
  local fence = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return fence
end
if owner == ARGV[1] then
  -- Only a free lock increments the counter, so while the lock is held
  -- the counter is its holder's fencing token.
  local fence = tonumber(redis.call('GET', KEYS[2]))
  if fence and fence >= 1 then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return fence
  end
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  return -pttl
end
return 0
