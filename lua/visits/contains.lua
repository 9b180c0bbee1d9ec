#!lua flags=no-writes
--- Tell whether a member was counted on a day, with the day's distinct count
-- KEYS[1] counter string ro: the day's count of distinct members
-- KEYS[2] shard set ro: the member's shard set of that day
-- ARGV[1] member int64: the member, a canonical decimal int64 (the values visits.add accepts)
-- RETURNS integers: {counted, count}: counted is 1 when the member was counted that day, count the day's count
-- READS GET SISMEMBER
return {redis.call('SISMEMBER', KEYS[2], ARGV[1]), tonumber(redis.call('GET', KEYS[1]) or '0')}
