#!lua
--- Write field/value pairs expiring together into one shard of an expiring map, within its field limit and size cap
-- KEYS[1] shard hash rw: one shard of an expiring map (a HASH whose values start with their expiry); the only key
--    touched
-- ARGV[1] only_absent bool: 1 keeps live entries (of a field repeated in the call the first pair wins), 0
--    overwrites (the last pair wins); an expired entry counts as absent
-- ARGV[2] ttl_ms integer 0..999999999999999: the time to live of the entries written, in milliseconds; 0 for none
-- ARGV[3] max_entries integer 0..999999999999999: refuse, writing nothing, when the shard would then hold more
--    fields than this (its hash-max-listpack-entries) even with its expired entries removed; 0 for no limit
-- ARGV[4] cap integer 0..999999999999999: keep at most this many entries in the shard, evicting the other live
--    ones nearest their expiry first (those without expiry last; the entries written are kept); 0 for no cap
-- ARGV[5..] pairs bytes: field, value, field, value, ...
-- RETURNS integers: {new, evicted}: the fields that had no live entry before (for only_absent: inserted), and
--    the live entries the cap evicted
-- WRITES HDEL HSET
-- READS HGETALL HLEN HMGET TIME
-- ERRORS BADARG FULL
-- INCLUDE expiry
-- IDEMPOTENT yes: the same fields get the same values again with their expiry renewed from the resend (with
--    only_absent, live ones are kept), and the shard is within its cap already
local nx = ARGV[1]
local ttl = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local n = #ARGV - 4
if n == 0 or n % 2 ~= 0 then
  return redis.error_reply('BADARG pairs must be a non-empty list of field, value')
end
local now = expiry_now()
local at = 0
if ttl > 0 then
  at = now + ttl
end
local fields = {}
for i = 5, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
end
-- Which fields exist (live or not): HMGET in chunks (unpack is capped).
local live, stored = {}, {}
local chunk = 4000
for s = 1, #fields, chunk do
  local e = math.min(s + chunk - 1, #fields)
  local got = redis.call('HMGET', KEYS[1], unpack(fields, s, e))
  for j = 1, #got do
    if got[j] then
      local f = fields[s + j - 1]
      stored[f] = true
      live[f] = expiry_live(expiry_split(got[j]), now)
    end
  end
end
-- The pairs written, last value of a field winning (first for only_absent).
local value, order, new = {}, {}, 0
for i = 5, #ARGV, 2 do
  local f = ARGV[i]
  if not (nx == '1' and (live[f] or value[f])) then
    if not value[f] then
      order[#order + 1] = f
      if not live[f] then
        new = new + 1
      end
    end
    value[f] = ARGV[i + 1]
  end
end
local added = 0
for _, f in ipairs(order) do
  if not stored[f] then
    added = added + 1
  end
end
-- Read the whole shard (at most its listpack limit of fields) only when the
-- cap applies or the limit would be passed: its expired entries go first.
local drop, evicted = {}, 0
local len = redis.call('HLEN', KEYS[1])
if cap > 0 or (limit > 0 and len + added > limit) then
  local all = redis.call('HGETALL', KEYS[1])
  local kept = {}
  for i = 1, #all, 2 do
    local f = all[i]
    local e = expiry_split(all[i + 1])
    if not value[f] then
      if expiry_live(e, now) then
        kept[#kept + 1] = { f, e }
      else
        drop[#drop + 1] = f
      end
    end
  end
  len = len - #drop
  if limit > 0 and len + added > limit then
    return redis.error_reply('FULL ' .. KEYS[1] .. ' holds ' .. len .. ' live fields; ' .. added ..
      ' new ones would exceed ' .. limit)
  end
  local over = #kept + #order - cap
  if cap > 0 and over > 0 then
    -- Nearest expiry first, entries without expiry last, then by field.
    table.sort(kept, function(a, b)
      local x, y = a[2], b[2]
      if x == 0 then x = math.huge end
      if y == 0 then y = math.huge end
      if x ~= y then
        return x < y
      end
      return a[1] < b[1]
    end)
    for i = 1, math.min(over, #kept) do
      drop[#drop + 1] = kept[i][1]
    end
    evicted = math.min(over, #kept)
  end
end
for s = 1, #drop, chunk do
  redis.call('HDEL', KEYS[1], unpack(drop, s, math.min(s + chunk - 1, #drop)))
end
local out = {}
for _, f in ipairs(order) do
  out[#out + 1] = f
  out[#out + 1] = expiry_join(at, value[f])
end
for s = 1, #out, 2 * chunk do
  redis.call('HSET', KEYS[1], unpack(out, s, math.min(s + 2 * chunk - 1, #out)))
end
return { new, evicted }
