#!lua
--- Create one block of a sized filter whose blocks spread over cluster slots, or check it
-- KEYS[1] block string rw: the block bitmap
-- ARGV[1] block_bits integer 7..4294967295: the block's usable bits; its sentinel is bit block_bits
-- ARGV[2] create bool: 1 to create it (before the config is written), 0 to require it
-- RETURNS integer: 1 when created now, 0 when it existed with this size and its sentinel set
-- WRITES SETBIT
-- READS BITCOUNT GETBIT INFO STRLEN
-- ERRORS BADARG BLOOMCONFIG MAXMEMORY NOFILTER
-- INCLUDE bulk_len
-- INCLUDE memory
-- IDEMPOTENT yes: a second call finds the pristine block it created and returns 0

-- Spread blocks are created first and the config (bloom.create) last, so a
-- crash in between leaves blocks without a config, and the retry adopts them.
-- With create = 1 an existing block is adopted only when pristine (right
-- size, no bit set but the sentinel: BITCOUNT 1); one holding data is a
-- leftover of something else and is refused (BLOOMCONFIG), never reused.
-- A block to create must fit the server's proto-max-bulk-len (BADARG) and
-- its maxmemory (MAXMEMORY), both checked before the one write.
local bits = tonumber(ARGV[1])
local len = redis.call('STRLEN', KEYS[1])
if len == 0 then
  if ARGV[2] ~= '1' then
    return redis.error_reply('NOFILTER block ' .. KEYS[1] .. ' is missing')
  end
  local refused = bulk_len_refusal(KEYS[1], bits, 'block_bits', 'a block of ' .. bits .. ' bits')
    or memory_refusal(math.floor(bits / 8) + 1, KEYS[1])
  if refused then
    return refused
  end
  redis.call('SETBIT', KEYS[1], bits, '1')
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
