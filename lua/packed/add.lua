#!lua
--- Add to a little-endian integer field inside one record and return the field's new value; with a request key, once per request
-- KEYS[1] shard string rw: one shard of packed records (a STRING)
-- KEYS[2] request string rw: the request's key (same slot as the shard): remembers this call's result for
--    request_ttl_ms; untouched when request_ttl_ms is 0
-- ARGV[1] reserve integer 0..536870912: grow a shorter shard to this many bytes first (see put); 0 grows as written
-- ARGV[2] offset integer 0..536870912: byte offset of the field in the shard
-- ARGV[3] size integer 1..6: the field's width in bytes
-- ARGV[4] signed bool: 1 for two's complement, 0 for unsigned
-- ARGV[5] delta integer -9007199254740991..9007199254740991: added to the field; bytes past the end of the shard read as 0
-- ARGV[6] request_ttl_ms integer 0..999999999999999: how long the request key remembers the result; 0 for a
--    call without a request id
-- RETURNS integer: the field's new value (for a request seen before: what its first run returned)
-- WRITES SET SETRANGE
-- READS GET GETBIT GETRANGE INFO STRLEN
-- ERRORS BADARG MAXMEMORY OVERFLOW
-- INCLUDE request
-- INCLUDE shard
-- IDEMPOTENT if request_ttl_ms: a resend with the same request key finds the first run's result and returns
--    it without adding again; without a request key a resend adds delta twice
local ttl = ARGV[6]
local done = replayed(KEYS[2], ttl)
if done then
  return done
end
local max = 536870912
local offset, size = tonumber(ARGV[2]), tonumber(ARGV[3])
if offset + size > max then
  return redis.error_reply('BADARG offset must be an integer with offset + size <= 536870912')
end
local raw = redis.call('GETRANGE', KEYS[1], offset, offset + size - 1)
local span = 2 ^ (8 * size)
local value = 0
for i = size, 1, -1 do
  value = value * 256 + (string.byte(raw, i) or 0)
end
local lo, hi = 0, span - 1
if ARGV[4] == '1' then
  lo, hi = -span / 2, span / 2 - 1
  if value > hi then
    value = value - span
  end
end
local new = value + tonumber(ARGV[5])
if new < lo or new > hi then
  return redis.error_reply('OVERFLOW ' .. string.format('%.0f + %s leaves the %d-byte field range %.0f..%.0f',
    value, ARGV[5], size, lo, hi))
end
-- Within the server's string limit and maxmemory, grown to the reserve
-- (lua/includes/shard.lua); then, with nothing left that can fail, write.
local refused = shard_room(KEYS[1], tonumber(ARGV[1]), offset + size, 'offset')
if refused then
  return refused
end
local u = new
if u < 0 then
  u = u + span
end
local bytes = {}
for i = 1, size do
  local b = u % 256
  bytes[i] = string.char(b)
  u = (u - b) / 256
end
redis.call('SETRANGE', KEYS[1], offset, table.concat(bytes))
if ttl ~= '0' then
  redis.call('SET', KEYS[2], string.format('%.0f', new), 'PX', ttl)
end
return new
