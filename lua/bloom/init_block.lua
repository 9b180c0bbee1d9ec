#!lua
--- Create one block of a sized filter whose blocks spread over cluster slots, or check it
-- KEYS[1] block: the block bitmap
-- ARGV[1] block_bits integer: the block's usable bits; its sentinel is bit block_bits
-- ARGV[2] create integer: 1 to create it when missing (the config was just created), 0 to require it
-- RETURNS integer: 1 when created now, 0 when it existed with this size and its sentinel set
-- ERRORS BADARG BLOOMCONFIG NOFILTER
local bits = tonumber(ARGV[1])
if not bits or bits < 7 or bits % 1 ~= 0 or bits >= 4294967296 then
  return redis.error_reply('BADARG block_bits must be an integer from 7 to 2^32-1')
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
if redis.call('GETBIT', KEYS[1], bits) ~= 1 then
  return redis.error_reply('NOFILTER block ' .. KEYS[1] .. ' lost its sentinel bit')
end
return 0
