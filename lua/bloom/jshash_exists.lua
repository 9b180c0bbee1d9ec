#!lua flags=no-writes
--- Check items in a PHP JSHash filter (the PHP BloomFilter::JSHash recipe): one bit per item at its JSHash offset
-- KEYS[1] bitmap string ro: the filter's bitmap, e.g. bloom_user_email
-- ARGV[1..] offsets integer 0..4294967295: one offset per item, JSHash(item) computed by the client
-- RETURNS integers: one per item, in order: 1 when its bit is set (maybe present), 0 when not (absent)
-- READS BITFIELD_RO
local args = {}
local a = 0
for i = 1, #ARGV do
  args[a + 1] = 'GET'
  args[a + 2] = 'u1'
  args[a + 3] = ARGV[i]
  a = a + 3
end
local out = {}
local from = 1
while from <= a do
  local to = math.min(from + 7994, a)
  local got = redis.call('BITFIELD_RO', KEYS[1], unpack(args, from, to))
  for j = 1, #got do
    out[#out + 1] = got[j]
  end
  from = to + 1
end
return out
