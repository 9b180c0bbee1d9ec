#!lua
--- Reset every bit of the given blocks of a sized filter to 0 (keeping their size, sentinel and TTL)
-- KEYS[1..] blocks string rw: block bitmaps that share a slot
-- ARGV[1..] block_bits integer 7..4294967295: the usable bits of each block, in KEYS order
--    (one less than a multiple of 8)
-- RETURNS integer: the number of blocks cleared
-- WRITES DEL PEXPIREAT SETBIT
-- READS GETBIT PEXPIRETIME
-- ERRORS BADARG
-- INCLUDE bulk_len
-- IDEMPOTENT yes: the blocks are reset again to the same empty bitmaps and expiries

-- Each block is deleted and re-created by `SETBIT block block_bits 1`: Redis
-- allocates the string zero-filled at its exact size with the sentinel (last
-- bit) set, so a block that had lost its sentinel is usable again, and no
-- block-sized string is ever built in Lua. Its expiry (absolute, from
-- PEXPIRETIME, read for every block before the first write) is put back; a
-- block without one stays without. Every block must be within the server's
-- proto-max-bulk-len (a smaller limit set after the filter was created
-- would make a SETBIT fail after the DEL): checked first by GETBIT, which
-- writes nothing.
if #KEYS ~= #ARGV then
  return redis.error_reply('BADARG block_bits one per block')
end
for i = 1, #ARGV do
  if (tonumber(ARGV[i]) + 1) % 8 ~= 0 then
    return redis.error_reply('BADARG block_bits must be one less than a multiple of 8')
  end
end
local at = {}
for i = 1, #KEYS do
  at[i] = redis.call('PEXPIRETIME', KEYS[i])
  local refused = bulk_len_refusal(KEYS[i], ARGV[i], 'block_bits', 'a block of ' .. ARGV[i] .. ' bits')
  if refused then
    return refused
  end
end
for i = 1, #KEYS do
  redis.call('DEL', KEYS[i])
  redis.call('SETBIT', KEYS[i], ARGV[i], '1')
  if at[i] > 0 then
    redis.call('PEXPIREAT', KEYS[i], at[i])
  end
end
return #KEYS
