#!lua
--- Count one visit: add the member to its shard set and increment the day's counter only if it is new
-- KEYS[1] counter string rw: the day's count of distinct members (same hash tag as every shard of the day)
-- KEYS[2] shard set rw: the member's shard set of that day (crc32 of the member's decimal string mod shards)
-- ARGV[1] expire_at integer 0..999999999999999: unix seconds at which the day's keys expire (end of day plus grace); 0 for no expiry
-- ARGV[2] accept_until integer 0..999999999999999: unix seconds from which visits to the day are refused (end of day plus
--    the late window); 0 to accept them as long as the keys live
-- ARGV[3] member int64: the member, a canonical decimal int64 (so the shard stays intset-encoded)
-- RETURNS integers: {new, count}: new is 1 when the member had not been counted that day, 0 otherwise;
--    count is the day's distinct count after this call
-- WRITES EXPIREAT INCR SADD
-- READS GET SISMEMBER TIME
-- ERRORS DAYENDED
-- IDEMPOTENT yes: the member is in its shard already, so the counter is not incremented again
--    (the second reply says it is not new)
if ARGV[1] ~= '0' or ARGV[2] ~= '0' then
  local now = tonumber(redis.call('TIME')[1])
  if ARGV[2] ~= '0' and tonumber(ARGV[2]) <= now then
    return redis.error_reply('DAYENDED accept_until ' .. ARGV[2] .. ' is not after the server time ' .. now)
  end
  if ARGV[1] ~= '0' and tonumber(ARGV[1]) <= now then
    return redis.error_reply('DAYENDED expire_at ' .. ARGV[1] .. ' is not after the server time ' .. now)
  end
end
if redis.call('SISMEMBER', KEYS[2], ARGV[3]) == 1 then
  return {0, tonumber(redis.call('GET', KEYS[1]) or '0')}
end
-- INCR first: the one write that can fail on what its key holds.
local count = redis.call('INCR', KEYS[1])
redis.call('SADD', KEYS[2], ARGV[3])
if ARGV[1] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[1])
  redis.call('EXPIREAT', KEYS[2], ARGV[1])
end
return {1, count}
