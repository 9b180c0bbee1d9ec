#!lua
--- Delete a rolling sharded store: its index and every shard
-- KEYS[1] meta hash rw: the store's index hash
-- KEYS[2..] slots hash,list rw: hash and order list of every ring slot (hash, order, hash, order, ...)
-- RETURNS integer: the number of records (shard fields) deleted
-- WRITES UNLINK
-- READS HGET HLEN
-- ERRORS RINGCONF
-- IDEMPOTENT yes: a second call finds nothing left to delete
local stored = redis.call('HGET', KEYS[1], 'shards')
local shards = (#KEYS - 1) / 2
if stored and tonumber(stored) ~= shards then
  return redis.error_reply('RINGCONF stored shards=' .. stored .. ', called with shards=' .. shards)
end
local n = 0
for i = 2, #KEYS, 2 do
  local len = redis.call('HLEN', KEYS[i])
  n = n + len
end
for i = 1, #KEYS, 500 do
  redis.call('UNLINK', unpack(KEYS, i, math.min(i + 499, #KEYS)))
end
return n
