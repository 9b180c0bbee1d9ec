#!lua flags=no-writes
--- Check items in a PHP JSHash filter (the PHP BloomFilter::JSHash recipe): one bit per item at its JSHash offset
-- KEYS[1] bitmap string ro: the filter's bitmap, e.g. bloom_user_email
-- ARGV[1..] offsets integer 0..4294967295: one offset per item, JSHash(item) computed by the client
-- RETURNS integers: one per item, in order: 1 when its bit is set (maybe present), 0 when not (absent)
-- READS BITFIELD_RO
-- INCLUDE bitfield_u1
local out = {}
for _, args in ipairs(u1_calls(ARGV, 1, 'GET')) do
  -- Maybe present when its bit is set.
  per_item(redis.call('BITFIELD_RO', KEYS[1], unpack(args)), 1, 0, 1, out)
end
return out
