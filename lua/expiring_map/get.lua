#!lua
--- The live values of fields of one shard of an expiring map; with idle_ms, a read leaves its entry at least idle_ms - idle_ms/16 to live, pushing its expiry to idle_ms from now when it had less
-- KEYS[1] shard hash rw: one shard of an expiring map (written only with idle_ms)
-- ARGV[1] idle_ms integer 0..999999999999999: the max-idle time: a live entry read whose expiry is sooner than
--    idle_ms - floor(idle_ms / 16) milliseconds from now gets the expiry idle_ms from now, one that expires
--    later is not written (an entry without expiry keeps none); 0 reads only
-- ARGV[2..] fields bytes: the fields, at least one
-- RETURNS bulks: the values in the order asked, nil for a field with no live entry
-- WRITES HSET
-- READS HMGET TIME
-- ERRORS BADARG
-- INCLUDE expiry
-- IDEMPOTENT yes: a second read leaves the same entries at least as long to live from its own moment
local idle = tonumber(ARGV[1])
if #ARGV < 2 then
  return redis.error_reply('BADARG fields must name at least one field')
end
local now = expiry_now()
-- An expiry sooner than `due` is pushed to now + idle: a read within
-- idle/16 of the last push writes nothing (the Rust crate reads first with
-- HMGET and TIME and calls this script only for an entry due by this
-- rule, `portable::due`).
local due = now + idle - (idle - idle % 16) / 16
-- The fields straight from ARGV (no copy), in chunks (unpack is capped).
local out, touched = {}, {}
local chunk = 4000
for s = 2, #ARGV, chunk do
  local e = math.min(s + chunk - 1, #ARGV)
  local got = redis.call('HMGET', KEYS[1], unpack(ARGV, s, e))
  for j = 1, e - s + 1 do
    local v = false
    if got[j] then
      local at, value = expiry_split(got[j])
      if expiry_live(at, now) then
        v = value
        if idle > 0 and at ~= 0 and at < due then
          touched[#touched + 1] = ARGV[s + j - 1]
          touched[#touched + 1] = expiry_join(now + idle, value)
        end
      end
    end
    out[s + j - 2] = v
  end
end
for s = 1, #touched, 2 * chunk do
  redis.call('HSET', KEYS[1], unpack(touched, s, math.min(s + 2 * chunk - 1, #touched)))
end
return out
