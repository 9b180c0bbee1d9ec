#!lua
--- Mark a user signed in on a day (SETBIT <day> <uid> 1), refusing uids above the configured maximum
-- KEYS[1] day string rw: the day's sign-in bitmap, `<prefix>:<YYYYMMDD>` (bit uid)
-- ARGV[1] uid integer 0..999999999999999: the user id, 0 to max_uid (the bit offset)
-- ARGV[2] max_uid integer 0..4294967295: the configured maximum user id (the offset trap guard)
-- ARGV[3] expire_at integer 0..999999999999999: unix seconds at which the bitmap expires, 0 to keep it
-- RETURNS integer: 1 when the user had not signed in that day yet, 0 otherwise
-- WRITES EXPIREAT SETBIT
-- READS INFO STRLEN
-- ERRORS MAXMEMORY UIDRANGE
-- IDEMPOTENT yes: the bit is set already; the expiry is absolute
if tonumber(ARGV[1]) > tonumber(ARGV[2]) then
  return redis.error_reply('UIDRANGE uid ' .. ARGV[1] .. ' is above the configured maximum ' .. ARGV[2])
end
local grow = math.floor(tonumber(ARGV[1]) / 8) + 1 - redis.call('STRLEN', KEYS[1])
-- Room under maxmemory for the bitmap up to bit uid: Redis checks maxmemory only before a
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
local before = redis.call('SETBIT', KEYS[1], ARGV[1], 1)
if ARGV[3] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[3])
end
return 1 - before
