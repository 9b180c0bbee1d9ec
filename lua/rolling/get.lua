#!lua flags=no-writes
--- Read one record of a rolling sharded store, looking in the newest shard first
-- KEYS[1] meta hash ro: the store's index hash
-- KEYS[2..] hashes hash ro: the hash of every ring slot, slot 0 first (shards = #KEYS - 1)
-- ARGV[1] field string: the record's field
-- RETURNS bulk: the newest stored value of the field, or nil
-- READS HGET HMGET
-- ERRORS RINGCONF
-- INCLUDE ring
local shards = #KEYS - 1
local refused, head = ring_head(KEYS[1], shards)
if not head then
  return refused or false
end
for i = 0, shards - 1 do
  local v = redis.call('HGET', KEYS[2 + (head - i) % shards], ARGV[1])
  if v then
    return v
  end
end
return false
