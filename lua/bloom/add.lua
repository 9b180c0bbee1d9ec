#!lua
--- Set the k bits of each item in one block of a sized filter and report which items were new
-- KEYS[1] block: the block's bitmap: block_bits usable bits plus a sentinel bit (offset block_bits, always 1)
-- ARGV[1] block_bits integer: the block's usable bits (its sentinel is bit block_bits)
-- ARGV[2] k integer: bits per item, 1 to 64
-- ARGV[3..] offsets integer: k offsets per item, item after item, each in [0, block_bits); at most 1998
-- RETURNS integers: one per item, in order: 1 when at least one of its bits was 0 (newly added),
--    0 when all k were already set (maybe present before, or earlier in this call)
-- ERRORS BADARG NOFILTER

-- The client hashes and computes every offset (src/hash.rs documents the
-- scheme), so the script only validates them and sets them with ONE
-- `BITFIELD key SET u1 o 1 SET u1 o 1 ...` (4 values per bit, within Lua's
-- ~8000-value unpack cap, hence at most 1998 offsets per call), whose replies
-- are the old bits, folded per item below. Every offset is checked before the
-- first write and the block's sentinel bit must be 1, so a bad call or a
-- missing (deleted, evicted, never created) block writes nothing.
-- The Rust API's default engine sends the same BITFIELD without Lua (see
-- src/bloom.rs: passing thousands of arguments through Lua costs ~4x the
-- BITFIELD itself); this script is the server-validated variant, for other
-- languages and `Engine::Script`.
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
  args[a + 1] = 'SET'
  args[a + 2] = 'u1'
  args[a + 3] = o
  args[a + 4] = 1
  a = a + 4
end
if redis.call('GETBIT', KEYS[1], bits) ~= 1 then
  return redis.error_reply('NOFILTER block ' .. KEYS[1] .. ' is missing or lost its sentinel bit ' .. ARGV[1])
end
local out = {}
if a == 0 then
  return out
end
local old = redis.call('BITFIELD', KEYS[1], unpack(args, 1, a))
local j = 1
while j <= #old do
  local new = 0
  for b = j, j + k - 1 do
    if old[b] == 0 then
      new = 1
    end
  end
  out[#out + 1] = new
  j = j + k
end
return out
