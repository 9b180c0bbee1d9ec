#!lua
--- Release the lock, only if the caller still owns it
-- KEYS[1] lock string rw: the lock
-- ARGV[1] token string nonempty: the owner's token
-- RETURNS integer: 1 when released, 0 when the lock is not held with this token
-- WRITES DEL
-- READS GET
-- IDEMPOTENT yes: a second call finds the lock gone (or held by another owner) and deletes nothing (it answers 0)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
