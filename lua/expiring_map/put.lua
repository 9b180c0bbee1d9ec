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
-- RETURNS integer: new + evicted * 2^32: the fields that had no live entry before (for only_absent:
--    inserted), plus 2^32 times the live entries the cap evicted (one number: a table reply costs the server
--    more than the write; exact while fewer than 2^21 entries are evicted at once)
-- WRITES HDEL HSET
-- READS HGETALL HLEN HMGET TIME
-- ERRORS BADARG FULL
-- INCLUDE expiry
-- INCLUDE hash_pairs
-- INCLUDE map_put
-- IDEMPOTENT yes: the same fields get the same values again with their expiry renewed from the resend (with
--    only_absent, live ones are kept), and the shard is within its cap already
local nx = ARGV[1]
local ttl = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local now = expiry_now()
-- Which fields are stored (`live[f]` not nil) and which of those are live:
-- only the expiries are decoded.
local refused, live = pairs_stored(KEYS[1], ARGV, 5)
if refused then
  return refused
end
for f, stored in pairs(live) do
  live[f] = expiry_live(expiry_at(stored), now)
end
local chunk = 4000
local value, order, new = map_put_pairs(ARGV, 5, nx, live)
local added = 0
for _, f in ipairs(order) do
  if live[f] == nil then
    added = added + 1
  end
end
-- The shard grows by at most `added` fields; past a bound, its expired
-- entries go first, then the cap's evictions (the whole shard is read: at
-- most its listpack limit of fields).
local drop, evicted = {}, 0
if map_put_bounded(KEYS[1], added, limit, cap) then
  local all = redis.call('HGETALL', KEYS[1])
  local kept = {}
  for i = 1, #all, 2 do
    local f = all[i]
    if not value[f] then
      local e = expiry_at(all[i + 1])
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
  local full = map_put_full(KEYS[1], #all / 2 - #drop, added, limit)
  if full then
    return full
  end
  local gone = map_put_evicted(kept, map_put_over(kept, #order, cap))
  evicted = #gone
  for _, f in ipairs(gone) do
    drop[#drop + 1] = f
  end
end
for s = 1, #drop, chunk do
  redis.call('HDEL', KEYS[1], unpack(drop, s, math.min(s + chunk - 1, #drop)))
end
-- One stored expiry for every entry written.
local stamp = expiry_join(ttl > 0 and now + ttl or 0, '')
local out = {}
for _, f in ipairs(order) do
  out[#out + 1] = f
  out[#out + 1] = stamp .. value[f]
end
for s = 1, #out, 2 * chunk do
  redis.call('HSET', KEYS[1], unpack(out, s, math.min(s + 2 * chunk - 1, #out)))
end
return map_put_reply(new, evicted)
