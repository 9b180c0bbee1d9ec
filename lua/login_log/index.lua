#!lua
--- Set a user's bit in the day's index of its type and note the type (the cluster half of login_log.record)
-- KEYS[1] day_index: the day's bitmap of user ids of this type (bit uid)
-- KEYS[2] types: the month's set of user types seen (same hash tag as day_index)
-- ARGV[1] uid integer: the user id, 0 to max_uid (the bit offset in day_index)
-- ARGV[2] max_uid integer: the configured maximum user id (the offset trap guard), at most 4294967295
-- ARGV[3] user_type string: the user type
-- ARGV[4] expire_at integer: unix seconds at which the day index and types expire, 0 to keep them
-- RETURNS integer: 1 when the user's bit was not yet set in that day's index, 0 otherwise
-- ERRORS BADARG UIDRANGE
if not string.match(ARGV[2], '^%d+$') or #ARGV[2] > 10 or tonumber(ARGV[2]) > 4294967295 then
  return redis.error_reply('BADARG max_uid must be an integer from 0 to 4294967295')
end
if not string.match(ARGV[1], '^%d+$') then
  return redis.error_reply('BADARG uid must be a non-negative integer')
end
if #ARGV[1] > 15 or tonumber(ARGV[1]) > tonumber(ARGV[2]) then
  return redis.error_reply('UIDRANGE uid ' .. ARGV[1] .. ' is above the configured maximum ' .. ARGV[2])
end
if ARGV[3] == '' then
  return redis.error_reply('BADARG user_type must not be empty')
end
if not string.match(ARGV[4], '^%d+$') or #ARGV[4] > 15 then
  return redis.error_reply('BADARG expire_at must be a non-negative integer (unix seconds)')
end
local before = redis.call('SETBIT', KEYS[1], ARGV[1], 1)
redis.call('SADD', KEYS[2], ARGV[3])
if ARGV[4] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[4])
  redis.call('EXPIREAT', KEYS[2], ARGV[4], 'GT')
  if redis.call('TTL', KEYS[2]) == -1 then
    redis.call('EXPIREAT', KEYS[2], ARGV[4])
  end
end
return 1 - before
