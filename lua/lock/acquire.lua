#!lua
--- Take the lock if it is free and return a new fencing token
-- KEYS[1] lock: the lock; its value is the owner's token, its TTL the lease
-- KEYS[2] fence: the lock's fencing counter (never expires)
-- ARGV[1] token string: the new owner's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer: the lease in milliseconds, 1 to 999999999999999
-- RETURNS integer: > 0 when acquired: the fencing token, greater than any earlier one of this lock;
--    <= 0 when the lock is held: minus the holder's remaining lease in ms (0 when it has no TTL)
-- ERRORS BADARG
if ARGV[1] == '' then
  return redis.error_reply('BADARG token must not be empty')
end
if not string.match(ARGV[2], '^[1-9]%d*$') or #ARGV[2] > 15 then
  return redis.error_reply('BADARG lease_ms must be an integer from 1 to 999999999999999')
end
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then
  return redis.call('INCR', KEYS[2])
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  return -pttl
end
return 0
