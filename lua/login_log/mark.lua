#!lua
--- Set the day's bit in a user's monthly login log (the cluster half of login_log.record)
-- KEYS[1] log string rw: the user's monthly log, the PHP login-log recipe's `<prefix><YYYY-MM>_<type>_<uid>` (bit n = day n of the month)
-- ARGV[1] day integer 1..31: the day of the month
-- ARGV[2] expire_at integer 0..999999999999999: unix seconds at which the log expires, 0 to keep it
-- RETURNS integer: 1 when this is the user's first login recorded that day, 0 otherwise
-- WRITES EXPIREAT SETBIT
-- IDEMPOTENT yes: the bit is set already; the expiry is absolute
local before = redis.call('SETBIT', KEYS[1], ARGV[1], '1')
if ARGV[2] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[2])
end
return 1 - before
