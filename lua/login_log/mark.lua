#!lua
--- Set the day's bit in a user's monthly login log (the cluster half of login_log.record)
-- KEYS[1] log: the user's monthly log, the seed's `<prefix>_<YYYY-MM>_<type>_<uid>` (bit n = day n of the month)
-- ARGV[1] day integer: the day of the month, 1 to 31
-- ARGV[2] expire_at integer: unix seconds at which the log expires, 0 to keep it
-- RETURNS integer: 1 when this is the user's first login recorded that day, 0 otherwise
-- ERRORS BADARG
if not string.match(ARGV[1], '^%d+$') or #ARGV[1] > 2 or tonumber(ARGV[1]) < 1 or tonumber(ARGV[1]) > 31 then
  return redis.error_reply('BADARG day must be from 1 to 31')
end
if not string.match(ARGV[2], '^%d+$') or #ARGV[2] > 15 then
  return redis.error_reply('BADARG expire_at must be a non-negative integer (unix seconds)')
end
local before = redis.call('SETBIT', KEYS[1], ARGV[1], 1)
if ARGV[2] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[2])
end
return 1 - before
