#!lua
--- Set ids' bits in an event's bitmaps (one per configured granularity, or the unique event's one) and expire each after its period
-- KEYS[1..] bitmaps string rw: the event's bitmaps of the instant's periods (hour, day, ISO week, month, year: those
--    configured) or the unique event's bitmap (bit id); they share the event's hash tag
-- ARGV[1] max_id integer 0..4294967295: the configured maximum id (the offset trap guard)
-- ARGV[2..] values integer 0..999999999999999: one expire_at per bitmap in KEYS order (unix seconds, 0 to keep it),
--    then the ids (at least one), each 0 to max_id
-- RETURNS integer: how many of the ids were not yet set in the first bitmap (the finest period)
-- WRITES EXPIREAT SETBIT
-- READS INFO STRLEN
-- ERRORS BADARG MAXMEMORY UIDRANGE
-- INCLUDE memory
-- IDEMPOTENT yes: the bits are set already (the second reply says none is new); the expiries are absolute

-- Every id is checked, and the growth of every bitmap to the largest id
-- under maxmemory, before the first SETBIT.
local n = #KEYS
if #ARGV < n + 2 then
  return redis.error_reply('BADARG values expected one expire_at per bitmap (' .. n .. ') and at least one id')
end
local max_id = tonumber(ARGV[1])
local top = 0
for i = n + 2, #ARGV do
  local id = tonumber(ARGV[i])
  if id > max_id then
    return redis.error_reply('UIDRANGE id ' .. ARGV[i] .. ' is above the configured maximum ' .. ARGV[1])
  end
  if id > top then
    top = id
  end
end
local need = math.floor(top / 8) + 1
local grow = 0
-- The read first in its round, over every key: it checks each bitmap's
-- type, so the generated checks call no TYPE.
for k = 1, #KEYS do
  local len = redis.call('STRLEN', KEYS[k])
  grow = grow + math.max(need - len, 0)
end
local refused = memory_refusal(grow, n .. ' bitmaps')
if refused then
  return refused
end
local new = 0
for i = n + 2, #ARGV do
  if redis.call('SETBIT', KEYS[1], ARGV[i], 1) == 0 then
    new = new + 1
  end
  for k = 2, n do
    redis.call('SETBIT', KEYS[k], ARGV[i], 1)
  end
end
for k = 1, n do
  if ARGV[1 + k] ~= '0' then
    redis.call('EXPIREAT', KEYS[k], ARGV[1 + k])
  end
end
return new
