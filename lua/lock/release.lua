#!lua
--- Release the lock, only if the caller still owns it, and wake its waiters
-- KEYS[1] lock string rw: the lock
-- ARGV[1] token string nonempty: the owner's token
-- ARGV[2] channel string tagged: the lock's wake-up channel, a shard channel with the lock key's hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when released (a message on the channel wakes the waiters), 0 when the lock is not held with this token
-- WRITES DEL
-- READS GET SPUBLISH
-- IDEMPOTENT yes: a second call finds the lock gone (or held by another owner), deletes nothing and publishes nothing (it answers 0)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SPUBLISH', ARGV[2], 'released')
  return 1
end
return 0
