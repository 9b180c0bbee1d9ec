--- A call on one block of a sized filter: the offsets a whole number of items, the block there (its sentinel bit set)
-- READS GETBIT
-- ERRORS BADARG NOFILTER

-- `count` offsets for items of `k` bits each (at most 1998 per call, see
-- bloom/add.lua); the block's sentinel is bit `block_bits`, always 1, so a
-- missing (deleted, evicted, never created) block is an error, never a
-- silent "absent". Returns the refusal, or nil.
local function block_refusal(block, block_bits, k, count)
  if count % k ~= 0 or count > 1998 then
    return redis.error_reply('BADARG offsets count must be a multiple of k, at most 1998')
  end
  if redis.call('GETBIT', block, block_bits) ~= 1 then
    return redis.error_reply('NOFILTER block ' .. block .. ' is missing or lost its sentinel bit ' .. block_bits)
  end
  return nil
end
