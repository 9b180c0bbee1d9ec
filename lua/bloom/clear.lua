#!lua
--- Reset every bit of the given blocks of a sized filter to 0 (keeping their size, sentinel and TTL)
-- KEYS[1..] blocks: block bitmaps that share a slot
-- ARGV[1..] block_bits integer: the usable bits of each block, in KEYS order
-- RETURNS integer: the number of blocks cleared
-- ERRORS BADARG

-- Each block is deleted and re-created by `SETBIT block block_bits 1`: Redis
-- allocates the string zero-filled at its exact size with the sentinel (last
-- bit) set, so a block that had lost its sentinel is usable again, and no
-- block-sized string is ever built in Lua. Its expiry (absolute, from
-- PEXPIRETIME) is put back; a block without one stays without.
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
  local at = redis.call('PEXPIRETIME', KEYS[i])
  redis.call('DEL', KEYS[i])
  redis.call('SETBIT', KEYS[i], ARGV[i], 1)
  if at > 0 then
    redis.call('PEXPIREAT', KEYS[i], at)
  end
end
return #KEYS
