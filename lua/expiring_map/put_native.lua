#!lua
--- Write field/value pairs expiring together into one shard of an expiring map kept on the server's per-field TTL, within its field limit and size cap
-- KEYS[1] shard hash rw: one shard of an expiring map on the native path (a HASH whose fields carry their own
--    TTL); the only key touched
-- ARGV[1] only_absent bool: 1 keeps live entries (of a field repeated in the call the first pair wins), 0
--    overwrites (the last pair wins); an expired field counts as absent
-- ARGV[2] ttl_ms integer 0..999999999999999: the time to live of the entries written, in milliseconds; 0 for none
-- ARGV[3] max_entries integer 0..999999999999999: refuse, writing nothing, when the shard would then hold more
--    live fields than this (its hash-max-listpack-entries); 0 for no limit
-- ARGV[4] cap integer 0..999999999999999: keep at most this many entries in the shard, evicting the other live
--    ones nearest their expiry first (those without expiry last; the entries written are kept); 0 for no cap
-- ARGV[5..] pairs bytes: field, value, field, value, ...
-- RETURNS integer: new + evicted * 2^32: the fields that had no live entry before (for only_absent:
--    inserted), plus 2^32 times the live entries the cap evicted (one number: a table reply costs the server
--    more than the write; exact while fewer than 2^21 entries are evicted at once)
-- WRITES HDEL HSETEX
-- READS HKEYS HLEN HMGET HPTTL
-- ERRORS BADARG FULL
-- NEEDS hash_field_ttl hash_getex
-- INCLUDE hash_pairs
-- INCLUDE map_put
-- IDEMPOTENT yes: the same fields get the same values again with their TTL renewed from the resend (with
--    only_absent, live ones are kept), and the shard is within its cap already
local nx = ARGV[1]
local ttl = ARGV[2]
local limit = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
-- Which fields have a live entry (`live[f]` not nil: the server hides
-- expired fields).
local refused, live = pairs_stored(KEYS[1], ARGV, 5)
if refused then
  return refused
end
local chunk = 4000
local value, order, new = map_put_pairs(ARGV, 5, nx, live)
-- HLEN may count fields that expired but are not removed yet: only when it
-- passes a bound are the live fields listed (HKEYS lists only those). The
-- shard grows by at most `new` fields.
local evicted = 0
if map_put_bounded(KEYS[1], new, limit, cap) then
  local keys = redis.call('HKEYS', KEYS[1])
  local full = map_put_full(KEYS[1], #keys, new, limit)
  if full then
    return full
  end
  local kept = {}
  for _, f in ipairs(keys) do
    if not value[f] then
      kept[#kept + 1] = { f }
    end
  end
  local over = map_put_over(kept, #order, cap)
  if over > 0 then
    -- Each kept entry's time left (-1: none, last).
    for s = 1, #kept, chunk do
      local e = math.min(s + chunk - 1, #kept)
      local fields = {}
      for i = s, e do
        fields[#fields + 1] = kept[i][1]
      end
      local left = redis.call('HPTTL', KEYS[1], 'FIELDS', #fields, unpack(fields))
      for i = s, e do
        local t = left[i - s + 1]
        if t < 0 then
          t = math.huge
        end
        kept[i][2] = t
      end
    end
    local drop = map_put_evicted(kept, over)
    evicted = #drop
    for s = 1, #drop, chunk do
      redis.call('HDEL', KEYS[1], unpack(drop, s, math.min(s + chunk - 1, #drop)))
    end
  end
end
-- At most 2,000 pairs per HSETEX: its arguments stay within unpack's cap.
for s = 1, #order, chunk / 2 do
  local e = math.min(s + chunk / 2 - 1, #order)
  local args = {}
  if ttl ~= '0' then
    args[1] = 'PX'
    args[2] = ttl
  end
  args[#args + 1] = 'FIELDS'
  args[#args + 1] = e - s + 1
  for i = s, e do
    args[#args + 1] = order[i]
    args[#args + 1] = value[order[i]]
  end
  redis.call('HSETEX', KEYS[1], unpack(args))
end
return map_put_reply(new, evicted)
