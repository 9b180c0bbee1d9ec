#!lua
--- Add items to a PHP JSHash filter (the PHP BloomFilter::JSHash recipe): set one bit per item at its JSHash offset
-- KEYS[1] bitmap string rw: the filter's bitmap, e.g. bloom_user_email as the PHP recipe wrote it
-- ARGV[1..] offsets integer 0..4294967295: one offset per item, JSHash(item) computed by the client
-- RETURNS integers: one per item, in order: 1 when its bit was 0 (newly added), 0 when it was set already
-- WRITES BITFIELD
-- READS GETBIT INFO STRLEN
-- ERRORS BADARG MAXMEMORY
-- INCLUDE bitfield_u1
-- INCLUDE bulk_len
-- INCLUDE memory
-- IDEMPOTENT yes: bits that are set already stay set (the second reply says every item was present)

-- k = 1: the PHP recipe's SETBIT per item, batched into one BITFIELD per 1999
-- offsets (Lua's unpack cap). The generated checks refuse a bad offset
-- before the first write. The bitmap grows with the largest offset (up to
-- 512 MB), as in the PHP recipe, if that fits: the largest offset must be within
-- the server's proto-max-bulk-len (a later BITFIELD would fail after an
-- earlier one wrote) and the growth under maxmemory.
local top = 0
for i = 1, #ARGV do
  top = math.max(top, tonumber(ARGV[i]))
end
local len = redis.call('STRLEN', KEYS[1])
local refused = #ARGV > 0 and bulk_len_refusal(KEYS[1], top, 'offsets', 'bit ' .. top)
  or memory_refusal(math.floor(top / 8) + 1 - len, KEYS[1])
if refused then
  return refused
end
local out = {}
for _, args in ipairs(u1_calls(ARGV, 1, 'SET')) do
  -- New when its old bit was 0.
  per_item(redis.call('BITFIELD', KEYS[1], unpack(args)), 1, 1, 0, out)
end
return out
