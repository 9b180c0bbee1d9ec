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
-- Every shard is read first (each read checks the shard is a hash), then
-- the newest value is picked once the head is known.
local found = {}
for i = 2, #KEYS do
  local v = redis.call('HGET', KEYS[i], ARGV[1])
  found[i] = v
end
local refused, head = ring_head(KEYS[1], shards)
if not head then
  return refused or false
end
for i = 0, shards - 1 do
  local v = found[2 + (head - i) % shards]
  if v then
    return v
  end
end
return false
