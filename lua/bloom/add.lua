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
-- INCLUDE bitfield_u1
-- INCLUDE bloom_block
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
local reply, args = block_call(KEYS[1], ARGV[1], ARGV[2], ARGV, 'SET')
if reply then
  return reply
end
-- An item is new when one of its old bits was 0.
return per_item(redis.call('BITFIELD', KEYS[1], unpack(args)), tonumber(ARGV[2]), 1, 0, {})
