#!lua flags=no-writes
--- Tell whether a member was counted on a day, with the day's distinct count
-- KEYS[1] counter: the day's count of distinct members
-- KEYS[2] shard: the member's shard set of that day
-- ARGV[1] member integer: the member, a canonical decimal int64
-- RETURNS integers: {counted, count}: counted is 1 when the member was counted that day, count the day's count
-- ERRORS BADARG
if not string.match(ARGV[1], '^%-?%d+$') then
  return redis.error_reply('BADARG member must be a decimal integer')
end
return {redis.call('SISMEMBER', KEYS[2], ARGV[1]), tonumber(redis.call('GET', KEYS[1]) or '0')}
