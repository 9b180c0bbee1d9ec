#!lua
--- Write field/value pairs into one shard, optionally only absent fields, never past a field limit
-- KEYS[1] shard hash rw: one shard of a sharded hash (a HASH); the only key touched
-- ARGV[1] only_absent bool: 1 keeps existing fields (HSETNX semantics; of a field repeated in
--    the call the first pair wins), 0 overwrites (the last pair wins)
-- ARGV[2] max_entries integer 0..999999999999999: refuse, writing nothing, when the shard would then hold more fields
--    than this (its hash-max-listpack-entries); 0 for no limit
-- ARGV[3..] pairs bytes: field, value, field, value, ...
-- RETURNS integer: the number of fields that were new to the shard (for only_absent: inserted)
-- WRITES HSET
-- READS HLEN HMGET
-- ERRORS BADARG FULL
-- INCLUDE hash_pairs
-- IDEMPOTENT yes: the same fields get the same values again (with only_absent, they are kept)
local nx = ARGV[1]
local limit = tonumber(ARGV[2])
-- Which fields exist already.
local refused, present = pairs_stored(KEYS[1], ARGV, 3)
if refused then
  return refused
end
local seen = {}
local new = 0
local out = {}
for i = 3, #ARGV, 2 do
  local f = ARGV[i]
  if present[f] then
    if nx == '0' then
      out[#out + 1] = f
      out[#out + 1] = ARGV[i + 1]
    end
  elseif not seen[f] then
    seen[f] = true
    new = new + 1
    out[#out + 1] = f
    out[#out + 1] = ARGV[i + 1]
  elseif nx == '0' then
    out[#out + 1] = f
    out[#out + 1] = ARGV[i + 1]
  end
end
if limit > 0 and new > 0 then
  local len = redis.call('HLEN', KEYS[1])
  if len + new > limit then
    return redis.error_reply('FULL ' .. KEYS[1] .. ' holds ' .. len .. ' fields; ' .. new ..
      ' new ones would exceed ' .. limit)
  end
end
local chunk = 4000
for s = 1, #out, 2 * chunk do
  local e = math.min(s + 2 * chunk - 1, #out)
  redis.call('HSET', KEYS[1], unpack(out, s, e))
end
return new
