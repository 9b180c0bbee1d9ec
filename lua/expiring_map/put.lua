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
-- INCLUDE map_put
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
local value, order, new = map_put_pairs(ARGV, 5, nx, live)
local added = 0
for _, f in ipairs(order) do
  if not stored[f] then
    added = added + 1
  end
end
-- The shard grows by at most `added` fields: only a bound it could then
-- pass needs its length, and only a bound it would pass counting expired
-- entries needs the whole shard read (at most its listpack limit of
-- fields), whose expired entries go first.
local drop, evicted = {}, 0
if cap > 0 or (limit > 0 and added > 0) then
  local len = redis.call('HLEN', KEYS[1])
  if (cap > 0 and len + added > cap) or (limit > 0 and len + added > limit) then
    local all = redis.call('HGETALL', KEYS[1])
    local kept = {}
    for i = 1, #all, 2 do
      local f = all[i]
      local e = expiry_split(all[i + 1])
      if not value[f] then
        if expiry_live(e, now) then
          if e == 0 then
            e = math.huge
          end
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
      local gone = map_put_evicted(kept, over)
      evicted = #gone
      for _, f in ipairs(gone) do
        drop[#drop + 1] = f
      end
    end
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
