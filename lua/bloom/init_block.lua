#!lua
--- Create one block of a sized filter whose blocks spread over cluster slots, or check it
-- KEYS[1] block: the block bitmap
-- ARGV[1] block_bits integer: the block's usable bits; its sentinel is bit block_bits
-- ARGV[2] create integer: 1 to create it (before the config is written), 0 to require it
-- RETURNS integer: 1 when created now, 0 when it existed with this size and its sentinel set
-- ERRORS BADARG BLOOMCONFIG NOFILTER

-- Spread blocks are created first and the config (bloom.create) last, so a
-- crash in between leaves blocks without a config, and the retry adopts them.
-- With create = 1 an existing block is adopted only when pristine (right
-- size, no bit set but the sentinel: BITCOUNT 1); one holding data is a
-- leftover of something else and is refused (BLOOMCONFIG), never reused.
local bits = tonumber(ARGV[1])
if not bits or bits < 7 or bits % 1 ~= 0 or bits >= 4294967296 then
  return redis.error_reply('BADARG block_bits must be an integer from 7 to 2^32-1')
end
if ARGV[2] ~= '0' and ARGV[2] ~= '1' then
  return redis.error_reply('BADARG create must be 0 or 1')
end
local len = redis.call('STRLEN', KEYS[1])
if len == 0 then
  if ARGV[2] ~= '1' then
    return redis.error_reply('NOFILTER block ' .. KEYS[1] .. ' is missing')
  end
  redis.call('SETBIT', KEYS[1], bits, 1)
  return 1
end
if len ~= math.floor(bits / 8) + 1 then
  return redis.error_reply('BLOOMCONFIG block ' .. KEYS[1] .. ' is ' .. len .. ' bytes, expected ' .. (math.floor(bits / 8) + 1))
end
if ARGV[2] == '1' then
  if redis.call('GETBIT', KEYS[1], bits) ~= 1 or redis.call('BITCOUNT', KEYS[1]) ~= 1 then
    return redis.error_reply('BLOOMCONFIG block ' .. KEYS[1] .. ' exists without a config and is not empty')
  end
  return 0
end
if redis.call('GETBIT', KEYS[1], bits) ~= 1 then
  return redis.error_reply('NOFILTER block ' .. KEYS[1] .. ' lost its sentinel bit')
end
return 0
