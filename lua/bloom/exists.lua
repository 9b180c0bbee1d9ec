#!lua flags=no-writes
--- Tell for each item whether all its k bits are set in one block of a sized filter
-- KEYS[1] block string ro: the block's bitmap: block_bits usable bits plus a sentinel bit (offset block_bits, always 1)
-- ARGV[1] block_bits integer 7..4294967295: the block's usable bits (its sentinel is bit block_bits)
-- ARGV[2] k integer 1..64: bits per item
-- ARGV[3..] offsets integer 0..block_bits-1: k offsets per item, item after item; at most 1998
-- RETURNS integers: one per item, in order: 1 when all its bits are set (maybe present), 0 when not (absent)
-- READS BITFIELD_RO GETBIT
-- ERRORS BADARG NOFILTER
-- INCLUDE bitfield_u1
-- INCLUDE bloom_block

-- The read-only twin of add.lua (EVALSHA_RO, so it runs on replicas): one
-- `BITFIELD_RO key GET u1 o GET u1 o ...`, its replies folded per item. A
-- missing block is an error, never a silent "absent" for every item.
local reply, args = block_call(KEYS[1], ARGV[1], ARGV[2], ARGV, 'GET')
if reply then
  return reply
end
-- An item may be present when all its bits are set.
return per_item(redis.call('BITFIELD_RO', KEYS[1], unpack(args)), tonumber(ARGV[2]), 0, 1, {})
