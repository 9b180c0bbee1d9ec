#!lua
--- Give the writer a fresh lease, only if the caller still holds the write lease
-- KEYS[1] writer string rw: the writer's token, its TTL the writer's lease
-- ARGV[1] token string nonempty: the writer's token
-- ARGV[2] lease_ms integer 1..999999999999999: the new lease in milliseconds from now
-- RETURNS integer: 1 when extended, 0 when the token does not hold the write lease
-- WRITES PEXPIRE
-- READS GET
-- IDEMPOTENT yes: a resend sets the same lease again
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
