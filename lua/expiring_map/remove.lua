#!lua
--- Remove fields from one shard of an expiring map; counts the live entries removed
-- KEYS[1] shard hash rw: one shard of an expiring map
-- ARGV[1..] fields bytes: the fields, at least one
-- RETURNS integer: how many of the fields had a live entry (expired ones are removed too, uncounted)
-- WRITES HDEL
-- READS HMGET TIME
-- ERRORS BADARG
-- INCLUDE expiry
-- IDEMPOTENT yes: a second run finds the fields gone and removes nothing
if #ARGV < 1 then
  return redis.error_reply('BADARG fields must name at least one field')
end
local now = expiry_now()
local got = redis.call('HMGET', KEYS[1], unpack(ARGV))
local live, present = 0, {}
for i = 1, #ARGV do
  if got[i] then
    present[#present + 1] = ARGV[i]
    if expiry_live(expiry_at(got[i]), now) then
      live = live + 1
    end
  end
end
if #present > 0 then
  redis.call('HDEL', KEYS[1], unpack(present))
end
return live
