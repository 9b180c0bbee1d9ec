#!lua
--- Give the owner a fresh lease, only if the caller still owns the lock
-- KEYS[1] lock: the lock
-- ARGV[1] token string: the owner's token
-- ARGV[2] lease_ms integer: the new lease in milliseconds from now, 1 to 999999999999999
-- RETURNS integer: 1 when extended, 0 when the lock is not held with this token
-- ERRORS BADARG
if not string.match(ARGV[2], '^[1-9]%d*$') or #ARGV[2] > 15 then
  return redis.error_reply('BADARG lease_ms must be an integer from 1 to 999999999999999')
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
