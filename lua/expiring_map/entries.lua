#!lua flags=no-writes
--- The live entries of one shard of an expiring map, with their expiries
-- KEYS[1] shard hash ro: one shard of an expiring map (at most its listpack limit of fields)
-- RETURNS array: field, value, expiry (unix ms, 0 for none), field, value, expiry, ...
-- READS HGETALL TIME
-- INCLUDE expiry
local now = expiry_now()
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local at, value = expiry_split(all[i + 1])
  if expiry_live(at, now) then
    out[#out + 1] = all[i]
    out[#out + 1] = value
    out[#out + 1] = at
  end
end
return out
