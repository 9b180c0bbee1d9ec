#!lua flags=no-writes
--- Count the records a rolling sharded store holds (every shard's fields)
-- KEYS[1] meta hash ro: the store's index hash
-- KEYS[2..] hashes hash ro: the hash of every ring slot, slot 0 first
-- RETURNS integer: the number of fields in all shards (a field stored in several shards counts each time)
-- READS HGET HLEN
-- ERRORS RINGCONF
local stored = redis.call('HGET', KEYS[1], 'shards')
local shards = #KEYS - 1
if stored and tonumber(stored) ~= shards then
  return redis.error_reply('RINGCONF stored shards=' .. stored .. ', called with shards=' .. shards)
end
local n = 0
for i = 2, #KEYS do
  local len = redis.call('HLEN', KEYS[i])
  n = n + len
end
return n
