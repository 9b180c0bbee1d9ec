#!lua
--- Mark a user signed in on a day (SETBIT <day> <uid> 1), refusing uids above the configured maximum
-- KEYS[1] day: the day's sign-in bitmap, `<prefix>:<YYYYMMDD>` (bit uid)
-- ARGV[1] uid integer: the user id, 0 to max_uid (the bit offset)
-- ARGV[2] max_uid integer: the configured maximum user id (the offset trap guard), at most 4294967295
-- ARGV[3] expire_at integer: unix seconds at which the bitmap expires, 0 to keep it
-- RETURNS integer: 1 when the user had not signed in that day yet, 0 otherwise
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
if not string.match(ARGV[3], '^%d+$') or #ARGV[3] > 15 then
  return redis.error_reply('BADARG expire_at must be a non-negative integer (unix seconds)')
end
local before = redis.call('SETBIT', KEYS[1], ARGV[1], 1)
if ARGV[3] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[3])
end
return 1 - before
