#!lua
--- Replace one record only if it still holds the expected bytes (compare-and-set)
-- KEYS[1] shard string rw: one shard of packed records (a STRING); the only key touched
-- ARGV[1] reserve integer 0..536870912: grow a shorter shard to this many bytes first (see put); 0 grows as written
-- ARGV[2] offset integer 0..536870912: byte offset of the record in the shard
-- ARGV[3] expected bytes nonempty: the record the caller expects (bytes past the end of the shard read as 0)
-- ARGV[4] record bytes nonempty: the new record, as wide as expected
-- RETURNS array: {1, previous record} when replaced, {0, current record} when it held something else
-- WRITES SET SETRANGE
-- READS GET GETBIT GETRANGE INFO STRLEN
-- ERRORS BADARG MAXMEMORY
-- INCLUDE shard
-- IDEMPOTENT no: after another writer put the expected record back, a resend would replace it again
local max = 536870912
local width = #ARGV[4]
if #ARGV[3] ~= width then
  return redis.error_reply('BADARG record must be as wide as expected')
end
local offset = tonumber(ARGV[2])
if offset + width > max then
  return redis.error_reply('BADARG offset must be an integer with offset + width <= 536870912')
end
local cur = redis.call('GETRANGE', KEYS[1], offset, offset + width - 1)
if #cur < width then
  cur = cur .. string.rep('\0', width - #cur)
end
if cur ~= ARGV[3] then
  return {0, cur}
end
-- Within the server's string limit and maxmemory, grown to the reserve
-- (lua/includes/shard.lua).
local refused = shard_room(KEYS[1], tonumber(ARGV[1]), offset + width, 'offset')
if refused then
  return refused
end
redis.call('SETRANGE', KEYS[1], offset, ARGV[4])
return {1, cur}
