#!lua
--- Count one visit: add the member to its shard set and increment the day's counter only if it is new
-- KEYS[1] counter: the day's count of distinct members (same hash tag as every shard of the day)
-- KEYS[2] shard: the member's shard set of that day (crc32 of the member's decimal string mod shards)
-- ARGV[1] expire_at integer: unix seconds at which the day's keys expire (end of day plus grace); 0 for no expiry
-- ARGV[2] member integer: the member, a canonical decimal int64 (so the shard stays intset-encoded)
-- RETURNS integers: {new, count}: new is 1 when the member had not been counted that day, 0 otherwise;
--    count is the day's distinct count after this call
-- ERRORS BADARG DAYENDED
local function canonical(s)
  if s == '0' then
    return true
  end
  local neg, digits = string.match(s, '^(%-?)([1-9]%d*)$')
  if not digits or #digits > 19 then
    return false
  end
  return #digits < 19 or digits <= (neg == '-' and '9223372036854775808' or '9223372036854775807')
end
local expire_at = ARGV[1]
if not string.match(expire_at, '^%d+$') or #expire_at > 15 then
  return redis.error_reply('BADARG expire_at must be a non-negative integer (unix seconds)')
end
if not canonical(ARGV[2]) then
  return redis.error_reply('BADARG member must be a canonical decimal int64, got ' .. string.sub(ARGV[2], 1, 40))
end
if expire_at ~= '0' then
  local now = tonumber(redis.call('TIME')[1])
  if tonumber(expire_at) <= now then
    return redis.error_reply('DAYENDED expire_at ' .. expire_at .. ' is not after the server time ' .. now)
  end
end
if redis.call('SADD', KEYS[2], ARGV[2]) == 1 then
  local count = redis.call('INCR', KEYS[1])
  if expire_at ~= '0' then
    redis.call('EXPIREAT', KEYS[1], expire_at)
    redis.call('EXPIREAT', KEYS[2], expire_at)
  end
  return {1, count}
end
return {0, tonumber(redis.call('GET', KEYS[1]) or '0')}
