#!lua flags=no-writes
--- Read one record of a rolling sharded store, looking in the newest shard first
-- KEYS[1] meta hash ro: the store's index hash
-- KEYS[2..] hashes hash ro: the hash of every ring slot, slot 0 first (shards = #KEYS - 1)
-- ARGV[1] field string: the record's field
-- RETURNS bulk: the newest stored value of the field, or nil
-- READS HGET HMGET
-- ERRORS RINGCONF
local m = redis.call('HMGET', KEYS[1], 'head', 'shards')
local shards = #KEYS - 1
if not m[1] then
  return false
end
if tonumber(m[2]) ~= shards then
  return redis.error_reply('RINGCONF stored shards=' .. tostring(m[2]) .. ', called with shards=' .. shards)
end
local head = tonumber(m[1])
for i = 0, shards - 1 do
  local v = redis.call('HGET', KEYS[2 + (head - i) % shards], ARGV[1])
  if v then
    return v
  end
end
return false
