#!lua
--- Create a sized filter's config hash (and its blocks in the same slot) once, or check an existing one matches
-- KEYS[1] config hash rw: the filter's config hash
-- KEYS[2..] blocks string rw: the block bitmaps to create with the config, or adopt when bloom.init_block created them
--    (all of them; none when blocks spread over slots, see bloom.init_block)
-- ARGV[1] m integer 1..9007199254740991: theoretical bits, ceil(-n ln p / (ln 2)^2)
-- ARGV[2] k integer 1..64: bits per item
-- ARGV[3] n integer 1..9007199254740991: expected items
-- ARGV[4] p string nonempty: target false-positive rate, strictly between 0 and 1, as the creator formatted it
-- ARGV[5] block_bits string nonempty: usable bits of each block, comma-separated (each block has one more, sentinel, bit)
-- ARGV[6] scheme string nonempty: hash scheme name
-- ARGV[7] version integer 1..2147483648: hash scheme version
-- ARGV[8] spread bool: 1 when block keys carry their own hash tag, 0 when they share the config's
-- RETURNS integer: 1 when created now, 0 when it existed with exactly these parameters
-- WRITES HSET SETBIT
-- READS BITCOUNT EXISTS GETBIT HMGET INFO STRLEN
-- ERRORS BADARG BLOOMCONFIG MAXMEMORY NOFILTER
-- INCLUDE bulk_len
-- INCLUDE memory
-- IDEMPOTENT yes: a second call finds the config it wrote and returns 0

-- Written once: the parameters never change after creation, and a caller
-- asking for other ones gets BLOOMCONFIG (`<field> stored <x> requested <y>`)
-- instead of silently setting bits at offsets computed for another size.
-- Every argument is checked before anything is read or written (the
-- generated checks, then the ones below), so a bad call leaves no
-- half-created filter. With spread = 1 the blocks live in other slots: the
-- client creates them first (bloom.init_block with create = 1) and calls
-- this last, so the config only exists once every block does. The Rust
-- client does the same for blocks in this slot (one init_block call per
-- block, so that the server's own maxmemory check runs between them); a
-- block that exists without a config is adopted when pristine (its size,
-- no bit set but the sentinel), refused when it holds anything else. Blocks
-- created here must fit under maxmemory (checked below) and every block
-- within the server's proto-max-bulk-len (else a later SETBIT would fail
-- after the HSET).
local p = tonumber(ARGV[4])
if not p or not (p > 0 and p < 1) then
  return redis.error_reply('BADARG p must be a number strictly between 0 and 1')
end
if not string.match(ARGV[5], '^%d[%d,]*$') or string.match(ARGV[5], ',$') or string.find(ARGV[5], ',,', 1, true) then
  return redis.error_reply('BADARG block_bits must be comma-separated integers')
end
local sizes = {}
local total = 0
for s in string.gmatch(ARGV[5], '[^,]+') do
  local bits = tonumber(s)
  if not string.match(s, '^[1-9]%d*$') or #s > 10 or bits < 7 or bits > 4294967295 or (bits + 1) % 8 ~= 0 then
    return redis.error_reply('BADARG block_bits ' .. s .. ' is not an integer from 7 to 2^32-1, one less than a multiple of 8')
  end
  sizes[#sizes + 1] = bits
  total = total + bits
end
if total < tonumber(ARGV[1]) then
  return redis.error_reply('BADARG block_bits the blocks hold ' .. total .. ' bits, fewer than m')
end
if ARGV[8] == '0' then
  if #KEYS - 1 ~= #sizes then
    return redis.error_reply('BADARG blocks one block key per block_bits entry without spread')
  end
elseif #KEYS ~= 1 then
  return redis.error_reply('BADARG blocks spread blocks are created by bloom.init_block, not passed here')
end
local fields = {'m', 'k', 'n', 'p', 'block_bits', 'scheme', 'version', 'spread'}
local want = {ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]}
local have = redis.call('HMGET', KEYS[1], unpack(fields))
if redis.call('EXISTS', KEYS[1]) == 1 then
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
local grow = 0
local new = {}
for i = 2, #KEYS do
  local bits = sizes[i - 1]
  local len = redis.call('STRLEN', KEYS[i])
  local refused, sentinel = bulk_len_refusal(KEYS[i], bits, 'block_bits', 'a block of ' .. bits .. ' bits')
  if refused then
    return refused
  end
  if len == 0 then
    new[#new + 1] = i
    grow = grow + math.floor(bits / 8) + 1
  elseif len ~= math.floor(bits / 8) + 1 or sentinel ~= 1 or redis.call('BITCOUNT', KEYS[i]) ~= 1 then
    return redis.error_reply('BLOOMCONFIG block ' .. KEYS[i] .. ' exists without a config and is not an empty block of this size')
  end
end
-- Room under maxmemory for the new blocks (Redis checks it only before a
-- script starts).
local refused = memory_refusal(grow, #new .. ' blocks')
if refused then
  return refused
end
local hset = {}
for i = 1, #fields do
  hset[#hset + 1] = fields[i]
  hset[#hset + 1] = want[i]
end
redis.call('HSET', KEYS[1], unpack(hset))
for _, i in ipairs(new) do
  redis.call('SETBIT', KEYS[i], sizes[i - 1], '1')
end
return 1
