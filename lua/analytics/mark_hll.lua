#!lua
--- Add ids to an event's HyperLogLog of one period and, when its bitmaps are given, set their bits too; expire each key after its period
-- KEYS[1] uniques string rw: the event's HyperLogLog of the instant's finest configured period (approximate uniques:
--    0.81 % standard error); it shares the event's hash tag
-- KEYS[2..] bitmaps string rw: the event's bitmaps of the instant's periods (those configured, finest first); none
--    when the ids are not dense integers (e-mail addresses, UUIDs: the HyperLogLog only)
-- ARGV[1] max_id integer 0..4294967295: the configured maximum id (the offset trap guard, with bitmaps)
-- ARGV[2..] values string: one expire_at per key in KEYS order (unix seconds, 0 to keep it), then the ids (at least
--    one): with bitmaps each a decimal integer 0 to max_id, without them any string
-- RETURNS integers: {changed, new}: changed is 1 when the HyperLogLog changed (PFADD's reply), new how many of the ids
--    were not yet set in the first bitmap (0 without bitmaps)
-- WRITES EXPIREAT PFADD SETBIT
-- READS INFO STRLEN
-- ERRORS BADARG MAXMEMORY UIDRANGE
-- INCLUDE memory
-- IDEMPOTENT yes: the ids are in the HyperLogLog and the bits set already (the second reply says nothing changed);
--    the expiries are absolute

-- Every expiry and id is checked, and the growth of every key under
-- maxmemory, before the first write: PFADD, which refuses a string that is
-- no HyperLogLog before changing it, so it must be the first write.
local n = #KEYS - 1
if #ARGV < n + 3 then
  return redis.error_reply('BADARG values expected one expire_at per key (' .. (n + 1) .. ') and at least one id')
end
for k = 2, n + 2 do
  local e = ARGV[k]
  if not (e == '0' or (#e <= 15 and string.match(e, '^[1-9]%d*$'))) then
    return redis.error_reply('BADARG values expire_at ' .. e .. ' is not an integer from 0 to 999999999999999')
  end
end
local max_id = tonumber(ARGV[1])
local top = 0
if n > 0 then
  for i = n + 3, #ARGV do
    local s = ARGV[i]
    if not (s == '0' or (#s <= 10 and string.match(s, '^[1-9]%d*$'))) then
      return redis.error_reply('BADARG values id ' .. s .. ' is not a decimal integer (bitmaps take integer ids)')
    end
    local id = tonumber(s)
    if id > max_id then
      return redis.error_reply('UIDRANGE id ' .. s .. ' is above the configured maximum ' .. ARGV[1])
    end
    if id > top then
      top = id
    end
  end
end
-- A dense HyperLogLog is 12304 bytes: the most PFADD grows one to.
local grow = math.max(12304 - redis.call('STRLEN', KEYS[1]), 0)
if n > 0 then
  local need = math.floor(top / 8) + 1
  for k = 2, n + 1 do
    grow = grow + math.max(need - redis.call('STRLEN', KEYS[k]), 0)
  end
end
local refused = memory_refusal(grow, (n + 1) .. ' keys')
if refused then
  return refused
end
local changed = redis.call('PFADD', KEYS[1], unpack(ARGV, n + 3, #ARGV))
-- The first bitmap through a computed index: there may be none.
local first = 2
local new = 0
if n > 0 then
  for i = n + 3, #ARGV do
    if redis.call('SETBIT', KEYS[first], ARGV[i], 1) == 0 then
      new = new + 1
    end
    for k = 3, n + 1 do
      redis.call('SETBIT', KEYS[k], ARGV[i], 1)
    end
  end
end
for k = 1, n + 1 do
  if ARGV[1 + k] ~= '0' then
    redis.call('EXPIREAT', KEYS[k], ARGV[1 + k])
  end
end
return {changed, new}
