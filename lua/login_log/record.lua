#!lua
--- Record a login: set the day's bit in the user's monthly log and the user's bit in the day's index of its type
-- KEYS[1] log: the user's monthly log, the seed's `<prefix>_<YYYY-MM>_<type>_<uid>` (bit n = day n of the month);
--    it has no hash tag (the seed's layout), so this script is for a single server or for keys that share
--    a slot: on a cluster the Rust API runs login_log.mark and login_log.index instead
-- KEYS[2] day_index: the day's bitmap of user ids of this type (bit uid)
-- KEYS[3] types: the month's set of user types seen (for "all users" queries)
-- ARGV[1] day integer: the day of the month, 1 to 31
-- ARGV[2] uid integer: the user id, 0 to max_uid (the bit offset in day_index)
-- ARGV[3] max_uid integer: the configured maximum user id (the offset trap guard), at most 4294967295
-- ARGV[4] user_type string: the user type, as in the log key
-- ARGV[5] log_expire_at integer: unix seconds at which the log expires, 0 to keep it
-- ARGV[6] index_expire_at integer: unix seconds at which the day index and types expire, 0 to keep them
-- RETURNS integer: 1 when this is the user's first login recorded that day, 0 otherwise
-- ERRORS BADARG UIDRANGE
local function uint(s, max)
  return string.match(s, '^%d+$') and #s <= 15 and tonumber(s) <= max
end
if not uint(ARGV[1], 31) or ARGV[1] == '0' then
  return redis.error_reply('BADARG day must be from 1 to 31')
end
if not uint(ARGV[3], 4294967295) then
  return redis.error_reply('BADARG max_uid must be an integer from 0 to 4294967295')
end
if not string.match(ARGV[2], '^%d+$') then
  return redis.error_reply('BADARG uid must be a non-negative integer')
end
if #ARGV[2] > 15 or tonumber(ARGV[2]) > tonumber(ARGV[3]) then
  return redis.error_reply('UIDRANGE uid ' .. ARGV[2] .. ' is above the configured maximum ' .. ARGV[3])
end
if ARGV[4] == '' then
  return redis.error_reply('BADARG user_type must not be empty')
end
if not uint(ARGV[5], 999999999999999) or not uint(ARGV[6], 999999999999999) then
  return redis.error_reply('BADARG expire_at must be a non-negative integer (unix seconds)')
end
local before = redis.call('SETBIT', KEYS[1], ARGV[1], 1)
redis.call('SETBIT', KEYS[2], ARGV[2], 1)
redis.call('SADD', KEYS[3], ARGV[4])
if ARGV[5] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[5])
end
if ARGV[6] ~= '0' then
  redis.call('EXPIREAT', KEYS[2], ARGV[6])
  redis.call('EXPIREAT', KEYS[3], ARGV[6], 'GT')
  if redis.call('TTL', KEYS[3]) == -1 then
    redis.call('EXPIREAT', KEYS[3], ARGV[6])
  end
end
return 1 - before
