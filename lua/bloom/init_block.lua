#!lua
--- Create one block of a sized filter whose blocks spread over cluster slots, or check it
-- KEYS[1] block string rw: the block bitmap
-- ARGV[1] block_bits integer 7..4294967295: the block's usable bits; its sentinel is bit block_bits
-- ARGV[2] create bool: 1 to create it (before the config is written), 0 to require it
-- RETURNS integer: 1 when created now, 0 when it existed with this size and its sentinel set
-- WRITES SETBIT
-- READS BITCOUNT GETBIT INFO STRLEN
-- ERRORS BADARG BLOOMCONFIG MAXMEMORY NOFILTER
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
  if type(redis.pcall('GETBIT', KEYS[1], bits)) == 'table' then
    return redis.error_reply('BADARG block_bits ' .. bits .. ' bits exceed the server\'s proto-max-bulk-len')
  end
  local grow = math.floor(bits / 8) + 1
  -- Room under maxmemory for the block: Redis checks maxmemory only before a
  -- script starts, so a growth of more than 64 KiB is checked here, before any
  -- write (the rule of src/core/memory.rs; smaller ones are left to Redis).
  if grow > 65536 then
    -- (A user whose ACL denies INFO gets the server's own check only.)
    local mem = redis.pcall('INFO', 'memory')
    if type(mem) ~= 'string' then
      mem = ''
    end
    local maxmemory = tonumber(string.match(mem, '\nmaxmemory:(%d+)')) or 0
    local used = tonumber(string.match(mem, '\nused_memory:(%d+)')) or 0
    if string.find(mem, '\nmaxmemory_policy:allkeys', 1, true) then
      used = used - (tonumber(string.match(mem, '\nused_memory_dataset:(%d+)')) or 0)
    end
    if maxmemory > 0 and used + grow > maxmemory then
      return redis.error_reply('MAXMEMORY needed ' .. grow .. ' available ' .. math.max(maxmemory - used, 0) .. ': growing ' .. KEYS[1])
    end
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
