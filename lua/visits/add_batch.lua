#!lua
--- Count many visits of one day in one call: add members to their shard sets, count only new ones
-- KEYS[1] counter: the day's count of distinct members (same hash tag as every shard of the day)
-- KEYS[2..] shards: the distinct shard sets this batch touches, in the order of the groups in ARGV
-- ARGV[1] expire_at integer: unix seconds at which the day's keys expire (end of day plus grace); 0 for no expiry
-- ARGV[2..] groups integer: for each shard key in order, the number n of its members, then those n members
--    (distinct canonical decimal int64 values)
-- RETURNS integers: {count, new_1, ..., new_m}: the day's distinct count after the batch, then 1 or 0 per
--    member in ARGV order (1 when it had not been counted that day)
-- ERRORS BADARG DAYENDED
local function canonical(s)
  if s == '0' then
    return true
  end
  local neg, digits = string.match(s, '^(%-?)([1-9]%d*)$')
  if not digits or #digits > 19 then
    return false
  end
  return #digits < 19 or digits <= (neg == '-' and '9223372036854775808' or '9223372036854775807')
end
local expire_at = ARGV[1]
if not string.match(expire_at, '^%d+$') or #expire_at > 15 then
  return redis.error_reply('BADARG expire_at must be a non-negative integer (unix seconds)')
end
-- Validate the whole layout before writing anything.
local groups = {}
local i = 2
for k = 2, #KEYS do
  local n = ARGV[i]
  if not n or not string.match(n, '^[1-9]%d*$') then
    return redis.error_reply('BADARG group ' .. (k - 1) .. ' needs a positive member count')
  end
  n = tonumber(n)
  if i + n > #ARGV then
    return redis.error_reply('BADARG group ' .. (k - 1) .. ' announces ' .. n .. ' members but fewer follow')
  end
  for j = i + 1, i + n do
    if not canonical(ARGV[j]) then
      return redis.error_reply('BADARG member must be a canonical decimal int64, got ' .. string.sub(ARGV[j], 1, 40))
    end
  end
  groups[#groups + 1] = {k, i + 1, i + n}
  i = i + n + 1
end
if i ~= #ARGV + 1 then
  return redis.error_reply('BADARG more arguments than the groups announce')
end
if expire_at ~= '0' then
  local now = tonumber(redis.call('TIME')[1])
  if tonumber(expire_at) <= now then
    return redis.error_reply('DAYENDED expire_at ' .. expire_at .. ' is not after the server time ' .. now)
  end
end
local out = {0}
local added = 0
local CHUNK = 4000
for _, g in ipairs(groups) do
  local key, from, to = KEYS[g[1]], g[2], g[3]
  local group_added = 0
  for a = from, to, CHUNK do
    local b = math.min(a + CHUNK - 1, to)
    local seen = redis.call('SMISMEMBER', key, unpack(ARGV, a, b))
    for _, s in ipairs(seen) do
      out[#out + 1] = 1 - s
    end
    group_added = group_added + redis.call('SADD', key, unpack(ARGV, a, b))
  end
  added = added + group_added
  if expire_at ~= '0' and group_added > 0 then
    redis.call('EXPIREAT', key, expire_at)
  end
end
if added > 0 then
  out[1] = redis.call('INCRBY', KEYS[1], added)
  if expire_at ~= '0' then
    redis.call('EXPIREAT', KEYS[1], expire_at)
  end
else
  out[1] = tonumber(redis.call('GET', KEYS[1]) or '0')
end
return out
