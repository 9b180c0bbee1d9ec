#!lua flags=no-writes
--- Tell for each item whether all its k bits are set in one block of a sized filter
-- KEYS[1] block: the block's bitmap: block_bits usable bits plus a sentinel bit (offset block_bits, always 1)
-- ARGV[1] block_bits integer: the block's usable bits (its sentinel is bit block_bits)
-- ARGV[2] k integer: bits per item, 1 to 64
-- ARGV[3..] offsets integer: k offsets per item, item after item, each in [0, block_bits); at most 1998
-- RETURNS integers: one per item, in order: 1 when all its bits are set (maybe present), 0 when not (absent)
-- ERRORS BADARG NOFILTER

-- The read-only twin of add.lua (EVALSHA_RO, so it runs on replicas): one
-- `BITFIELD_RO key GET u1 o GET u1 o ...`, its replies folded per item. A
-- missing block is an error, never a silent "absent" for every item.
local bits = tonumber(ARGV[1])
local k = tonumber(ARGV[2])
if not bits or bits < 7 or bits % 1 ~= 0 or bits >= 4294967296 then
  return redis.error_reply('BADARG block_bits must be an integer from 7 to 2^32-1')
end
if not k or k < 1 or k > 64 or k % 1 ~= 0 then
  return redis.error_reply('BADARG k must be an integer from 1 to 64')
end
local nargs = #ARGV
if (nargs - 2) % k ~= 0 or nargs - 2 > 1998 then
  return redis.error_reply('BADARG the number of offsets must be a multiple of k, at most 1998')
end
local args = {}
local a = 0
for i = 3, nargs do
  local o = tonumber(ARGV[i])
  if not o or o < 0 or o >= bits or o % 1 ~= 0 then
    return redis.error_reply('BADARG offset ' .. ARGV[i] .. ' is not an integer in [0, block_bits)')
  end
  args[a + 1] = 'GET'
  args[a + 2] = 'u1'
  args[a + 3] = o
  a = a + 3
end
if redis.call('GETBIT', KEYS[1], bits) ~= 1 then
  return redis.error_reply('NOFILTER block ' .. KEYS[1] .. ' is missing or lost its sentinel bit ' .. ARGV[1])
end
local out = {}
if a == 0 then
  return out
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
