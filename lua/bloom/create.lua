#!lua
--- Create a sized filter's config hash (and its blocks in the same slot) once, or check an existing one matches
-- KEYS[1] config: the filter's config hash
-- KEYS[2..] blocks: the block bitmaps to create with the config (all of them unless blocks spread over slots)
-- ARGV[1] m integer: theoretical bits, ceil(-n ln p / (ln 2)^2)
-- ARGV[2] k integer: bits per item
-- ARGV[3] n integer: expected items
-- ARGV[4] p string: target false-positive rate, as the creator formatted it
-- ARGV[5] block_bits string: usable bits of each block, comma-separated (each block has one more, sentinel, bit)
-- ARGV[6] scheme string: hash scheme name
-- ARGV[7] version integer: hash scheme version
-- ARGV[8] spread integer: 1 when block keys carry their own hash tag, 0 when they share the config's
-- RETURNS integer: 1 when created now, 0 when it existed with exactly these parameters
-- ERRORS BLOOMCONFIG NOFILTER

-- Written once: the parameters never change after creation, and a caller
-- asking for other ones gets BLOOMCONFIG (`<field> stored <x> requested <y>`)
-- instead of silently setting bits at offsets computed for another size.
local fields = {'m', 'k', 'n', 'p', 'block_bits', 'scheme', 'version', 'spread'}
local want = {ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]}
local sizes = {}
for s in string.gmatch(ARGV[5], '[^,]+') do
  sizes[#sizes + 1] = tonumber(s)
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local have = redis.call('HMGET', KEYS[1], unpack(fields))
  for i = 1, #fields do
    if have[i] ~= want[i] then
      return redis.error_reply('BLOOMCONFIG ' .. fields[i] .. ' stored ' .. tostring(have[i]) .. ' requested ' .. want[i])
    end
  end
  for i = 2, #KEYS do
    if redis.call('GETBIT', KEYS[i], sizes[i - 1]) ~= 1 then
      return redis.error_reply('NOFILTER block ' .. KEYS[i] .. ' is missing or lost its sentinel bit')
    end
  end
  return 0
end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return redis.error_reply('BLOOMCONFIG block ' .. KEYS[i] .. ' exists without a config')
  end
end
local hset = {}
for i = 1, #fields do
  hset[#hset + 1] = fields[i]
  hset[#hset + 1] = want[i]
end
redis.call('HSET', KEYS[1], unpack(hset))
for i = 2, #KEYS do
  redis.call('SETBIT', KEYS[i], sizes[i - 1], 1)
end
return 1
