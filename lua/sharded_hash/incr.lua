#!lua
--- Add to an integer field of one shard, never adding a field to a full shard
-- KEYS[1] shard hash rw: one shard of a sharded hash (a HASH); the only key touched
-- ARGV[1] field bytes: the field
-- ARGV[2] delta int64: added with HINCRBY semantics (a missing field counts as 0)
-- ARGV[3] max_entries integer 0..999999999999999: refuse, writing nothing, when the field is new and the shard
--    already holds this many fields; 0 for no limit
-- RETURNS integer: the field's new value
-- WRITES HINCRBY
-- READS HEXISTS HLEN
-- ERRORS FULL
local limit = tonumber(ARGV[3])
if limit > 0 and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local len = redis.call('HLEN', KEYS[1])
  if len >= limit then
    return redis.error_reply('FULL ' .. KEYS[1] .. ' holds ' .. len .. ' fields; a new one would exceed ' .. limit)
  end
end
return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
