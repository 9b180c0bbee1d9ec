#!lua flags=no-writes
--- Tell for each item whether all its k bits are set in one block of a sized filter
-- KEYS[1] block string ro: the block's bitmap: block_bits usable bits plus a sentinel bit (offset block_bits, always 1)
-- ARGV[1] block_bits integer 7..4294967295: the block's usable bits (its sentinel is bit block_bits)
-- ARGV[2] k integer 1..64: bits per item
-- ARGV[3..] offsets integer 0..block_bits-1: k offsets per item, item after item; at most 1998
-- RETURNS integers: one per item, in order: 1 when all its bits are set (maybe present), 0 when not (absent)
-- READS BITFIELD_RO GETBIT
-- ERRORS BADARG NOFILTER

-- The read-only twin of add.lua (EVALSHA_RO, so it runs on replicas): one
-- `BITFIELD_RO key GET u1 o GET u1 o ...`, its replies folded per item. A
-- missing block is an error, never a silent "absent" for every item.
local nargs = #ARGV
local k = tonumber(ARGV[2])
if (nargs - 2) % k ~= 0 or nargs - 2 > 1998 then
  return redis.error_reply('BADARG offsets count must be a multiple of k, at most 1998')
end
if redis.call('GETBIT', KEYS[1], ARGV[1]) ~= 1 then
  return redis.error_reply('NOFILTER block ' .. KEYS[1] .. ' is missing or lost its sentinel bit ' .. ARGV[1])
end
local out = {}
if nargs == 2 then
  return out
end
local args = {}
local a = 0
for i = 3, nargs do
  args[a + 1] = 'GET'
  args[a + 2] = 'u1'
  args[a + 3] = ARGV[i]
  a = a + 3
end
local got = redis.call('BITFIELD_RO', KEYS[1], unpack(args, 1, a))
local j = 1
while j <= #got do
  local all = 1
  for b = j, j + k - 1 do
    if got[b] == 0 then
      all = 0
    end
  end
  out[#out + 1] = all
  j = j + k
end
return out
