--- A call on one block of a sized filter: the offsets a whole number of items, the block there (its sentinel bit set), then its BITFIELD
-- INCLUDE bitfield_u1
-- READS GETBIT
-- ERRORS BADARG NOFILTER

-- `block_bits` and `k` are the script's first two arguments, `argv` its
-- ARGV: then come k offsets per item (at most 1998 per call, see
-- bloom/add.lua, so that they make one BITFIELD); `op` is SET (add) or GET
-- (exists). The block's sentinel is bit block_bits, always 1, so a missing
-- (deleted, evicted, never created) block is an error, never a silent
-- "absent". Returns the reply to give as it is (the refusal, or no items
-- for a call without offsets), or nil and the arguments of the one
-- BITFIELD (see u1_calls).
local function block_call(block, block_bits, k, argv, op)
  local count = #argv - 2
  if count % tonumber(k) ~= 0 or count > 1998 then
    return redis.error_reply('BADARG offsets count must be a multiple of k, at most 1998')
  end
  if redis.call('GETBIT', block, block_bits) ~= 1 then
    return redis.error_reply('NOFILTER block ' .. block .. ' is missing or lost its sentinel bit ' .. block_bits)
  end
  if count == 0 then
    return {}
  end
  return nil, u1_calls(argv, 3, op)[1]
end
