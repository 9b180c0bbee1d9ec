#!lua
--- Add items to a PHP JSHash filter (the PHP BloomFilter::JSHash recipe): set one bit per item at its JSHash offset
-- KEYS[1] bitmap string rw: the filter's bitmap, e.g. bloom_user_email as the PHP recipe wrote it
-- ARGV[1..] offsets integer 0..4294967295: one offset per item, JSHash(item) computed by the client
-- RETURNS integers: one per item, in order: 1 when its bit was 0 (newly added), 0 when it was set already
-- WRITES BITFIELD
-- READS GETBIT INFO STRLEN
-- ERRORS BADARG MAXMEMORY
-- IDEMPOTENT yes: bits that are set already stay set (the second reply says every item was present)

-- k = 1: the PHP recipe's SETBIT per item, batched into one BITFIELD per 1999
-- offsets (Lua's unpack cap). The generated checks refuse a bad offset
-- before the first write. The bitmap grows with the largest offset (up to
-- 512 MB), as in the PHP recipe, if that fits: the largest offset must be within
-- the server's proto-max-bulk-len (a later BITFIELD would fail after an
-- earlier one wrote) and the growth under maxmemory.
local top = 0
for i = 1, #ARGV do
  top = math.max(top, tonumber(ARGV[i]))
end
local len = redis.call('STRLEN', KEYS[1])
if #ARGV > 0 and type(redis.pcall('GETBIT', KEYS[1], top)) == 'table' then
  return redis.error_reply('BADARG offsets ' .. top .. ' is beyond the server\'s proto-max-bulk-len')
end
local grow = math.floor(top / 8) + 1 - len
-- Room under maxmemory for the bitmap up to its largest offset: Redis checks maxmemory only before a
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
local args = {}
local a = 0
for i = 1, #ARGV do
  args[a + 1] = 'SET'
  args[a + 2] = 'u1'
  args[a + 3] = ARGV[i]
  args[a + 4] = 1
  a = a + 4
end
local out = {}
local from = 1
while from <= a do
  local to = math.min(from + 7995, a)
  local old = redis.call('BITFIELD', KEYS[1], unpack(args, from, to))
  for j = 1, #old do
    out[#out + 1] = 1 - old[j]
  end
  from = to + 1
end
return out
