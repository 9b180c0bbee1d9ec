#!lua
--- Count one visit: add the member to its shard set and increment the day's counter only if it is new
-- KEYS[1] counter string rw: the day's count of distinct members (same hash tag as every shard of the day)
-- KEYS[2] shard set rw: the member's shard set of that day (crc32 of the member's decimal string mod shards)
-- KEYS[3] meta hash rw: the day's layout (pattern, version, shards), written with the day's first member
-- ARGV[1] expire_at integer 0..999999999999999: unix seconds at which the day's keys expire (end of day plus grace); 0 for no expiry
-- ARGV[2] accept_until integer 0..999999999999999: unix seconds from which visits to the day are refused (end of day plus
--    the late window); 0 to accept them as long as the keys live
-- ARGV[3] member int64: the member, a canonical decimal int64 (so the shard stays intset-encoded)
-- ARGV[4] shard_count integer 1..1048576: the caller's shard count; refused (LAYOUT) when the day stores another
-- RETURNS integers: {new, count}: new is 1 when the member had not been counted that day, 0 otherwise;
--    count is the day's distinct count after this call
-- WRITES EXPIREAT HSET INCR SADD
-- READS GET HGET SISMEMBER TIME
-- ERRORS DAYENDED LAYOUT
-- INCLUDE day_layout
-- INCLUDE day_open
-- IDEMPOTENT yes: the member is in its shard already, so the counter is not incremented again
--    (the second reply says it is not new)
local refused, stored = layout_refusal(KEYS[3], ARGV[4])
refused = refused or day_refusal(ARGV[1], ARGV[2])
if refused then
  return refused
end
if redis.call('SISMEMBER', KEYS[2], ARGV[3]) == 1 then
  return {0, tonumber(redis.call('GET', KEYS[1]) or '0')}
end
-- INCR first: the one write that can fail on what its key holds.
local count = redis.call('INCR', KEYS[1])
redis.call('SADD', KEYS[2], ARGV[3])
if ARGV[1] ~= '0' then
  redis.call('EXPIREAT', KEYS[2], ARGV[1])
end
day_written(KEYS[1], KEYS[3], stored, ARGV[4], ARGV[1])
return {1, count}
