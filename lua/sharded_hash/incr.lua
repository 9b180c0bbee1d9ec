#!lua
--- Add to an integer field of one shard, never adding a field to a full shard; with a request key, once per request
-- KEYS[1] shard hash rw: one shard of a sharded hash (a HASH)
-- KEYS[2] request string rw: the request's key (same slot as the shard): remembers this call's result for
--    request_ttl_ms; untouched when request_ttl_ms is 0
-- ARGV[1] field bytes: the field
-- ARGV[2] delta int64: added with HINCRBY semantics (a missing field counts as 0)
-- ARGV[3] max_entries integer 0..999999999999999: refuse, writing nothing, when the field is new and the shard
--    already holds this many fields; 0 for no limit
-- ARGV[4] request_ttl_ms integer 0..999999999999999: how long the request key remembers the result; 0 for a
--    call without a request id
-- RETURNS integer: the field's new value (for a request seen before: what its first run returned)
-- WRITES HINCRBY SET
-- READS GET HEXISTS HGET HLEN
-- ERRORS FULL
-- INCLUDE request
-- IDEMPOTENT if request_ttl_ms: a resend with the same request key finds the first run's result and returns
--    it without adding again; without a request key a resend adds delta twice
local ttl = ARGV[4]
local done = replayed(KEYS[2], ttl)
if done then
  return done
end
local limit = tonumber(ARGV[3])
if limit > 0 and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local len = redis.call('HLEN', KEYS[1])
  if len >= limit then
    return redis.error_reply('FULL ' .. KEYS[1] .. ' holds ' .. len .. ' fields; a new one would exceed ' .. limit)
  end
end
-- HINCRBY first: the one write that can fail on what its key holds.
local value = redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
if ttl ~= '0' then
  redis.call('SET', KEYS[2], redis.call('HGET', KEYS[1], ARGV[1]), 'PX', ttl)
end
return value
