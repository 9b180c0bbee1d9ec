#!lua
--- Give the owner a fresh lease, only if the caller still owns the lock
-- KEYS[1] lock string rw: the lock
-- ARGV[1] token string nonempty: the owner's token
-- ARGV[2] lease_ms integer 1..999999999999999: the new lease in milliseconds from now
-- RETURNS integer: 1 when extended, 0 when the lock is not held with this token
-- WRITES PEXPIRE
-- READS GET
-- IDEMPOTENT yes: a second call gives the same lease again, from a moment later
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
