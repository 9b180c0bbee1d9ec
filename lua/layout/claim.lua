#!lua
--- Store a layout in a meta hash unless one is stored there, and answer the stored one
-- KEYS[1] meta hash rw: the meta key of a sharded pattern: its layout (scheme, shard count, width, ...)
-- ARGV[1..] pairs bytes: field, value, field, value, ... of the layout to store when the key is absent
-- RETURNS bulks: the stored layout as field, value, field, value, ... (the pairs given, when the key was absent)
-- WRITES HSET
-- READS HGETALL
-- ERRORS BADARG
-- IDEMPOTENT yes: a second call finds the layout the first stored and answers it
if #ARGV == 0 or #ARGV % 2 ~= 0 then
  return redis.error_reply('BADARG pairs must be a non-empty list of field, value')
end
local stored = redis.call('HGETALL', KEYS[1])
if #stored > 0 then
  return stored
end
redis.call('HSET', KEYS[1], unpack(ARGV))
return ARGV
