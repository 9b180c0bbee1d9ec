#!lua
--- Remove the expired entries of one shard of an expiring map
-- KEYS[1] shard hash rw: one shard of an expiring map (at most its listpack limit of fields)
-- RETURNS integers: {removed, live}: the expired entries removed, and the live ones left
-- WRITES HDEL
-- READS HGETALL TIME
-- INCLUDE expiry
-- IDEMPOTENT yes: a second run finds nothing expired (or what expired since, which one later run also removes)
local now = expiry_now()
local all = redis.call('HGETALL', KEYS[1])
local drop = {}
for i = 1, #all, 2 do
  if not expiry_live(expiry_at(all[i + 1]), now) then
    drop[#drop + 1] = all[i]
  end
end
for s = 1, #drop, 4000 do
  redis.call('HDEL', KEYS[1], unpack(drop, s, math.min(s + 3999, #drop)))
end
return { #drop, #all / 2 - #drop }
