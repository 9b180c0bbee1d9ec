#!lua
--- Set the k bits of each item in one block of a sized filter and report which items were new
-- KEYS[1] block string rw: the block's bitmap: block_bits usable bits plus a sentinel bit (offset block_bits, always 1)
-- ARGV[1] block_bits integer 7..4294967295: the block's usable bits (its sentinel is bit block_bits)
-- ARGV[2] k integer 1..64: bits per item
-- ARGV[3..] offsets integer 0..block_bits-1: k offsets per item, item after item; at most 1998
-- RETURNS integers: one per item, in order: 1 when at least one of its bits was 0 (newly added),
--    0 when all k were already set (maybe present before, or earlier in this call)
-- WRITES BITFIELD
-- READS GETBIT
-- ERRORS BADARG NOFILTER
-- IDEMPOTENT yes: bits that are set already stay set (the second reply says every item was present)

-- The client hashes and computes every offset (src/hash.rs documents the
-- scheme), so the script only sets them with ONE
-- `BITFIELD key SET u1 o 1 SET u1 o 1 ...` (4 values per bit, within Lua's
-- ~8000-value unpack cap, hence at most 1998 offsets per call), whose replies
-- are the old bits, folded per item below. The generated checks refuse an
-- offset outside the block before the first write, and the block's sentinel
-- bit must be 1, so a bad call or a missing (deleted, evicted, never
-- created) block writes nothing.
-- The Rust API's default engine sends the same BITFIELD without Lua (see
-- src/bloom.rs: passing thousands of arguments through Lua costs ~4x the
-- BITFIELD itself); this script is the server-validated variant, for other
-- languages and `Engine::Script`.
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
  args[a + 1] = 'SET'
  args[a + 2] = 'u1'
  args[a + 3] = ARGV[i]
  args[a + 4] = 1
  a = a + 4
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
