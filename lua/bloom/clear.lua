#!lua
--- Reset every bit of the given blocks of a sized filter to 0 (keeping their size, sentinel and TTL)
-- KEYS[1..] blocks: block bitmaps that share a slot
-- ARGV[1..] block_bits integer: the usable bits of each block, in KEYS order
-- RETURNS integer: the number of blocks cleared
-- ERRORS BADARG

-- Each block is replaced by a string of zeros of its exact size whose last
-- bit (the sentinel) is 1, so a block that had lost its sentinel is usable
-- again afterwards.
if #KEYS ~= #ARGV then
  return redis.error_reply('BADARG one block_bits per block')
end
for i = 1, #KEYS do
  local bits = tonumber(ARGV[i])
  if not bits or bits < 7 or bits % 1 ~= 0 or bits >= 4294967296 or (bits + 1) % 8 ~= 0 then
    return redis.error_reply('BADARG block_bits must be an integer from 7 to 2^32-1, one less than a multiple of 8')
  end
end
for i = 1, #KEYS do
  local bytes = (tonumber(ARGV[i]) + 1) / 8
  redis.call('SET', KEYS[i], string.rep('\0', bytes - 1) .. '\1', 'KEEPTTL')
end
return #KEYS
