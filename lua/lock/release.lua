#!lua
--- Release the lock, only if the caller still owns it, and wake its waiters
-- KEYS[1] lock string rw: the lock
-- ARGV[1] token string nonempty: the owner's token
-- ARGV[2] channel string nonempty: the lock's wake-up channel, a shard channel with the lock key's hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when released (a message on the channel wakes the waiters), 0 when the lock is not held with this token
-- WRITES DEL
-- READS GET SPUBLISH
-- ERRORS BADARG

local owner = redis.call('GET', KEYS[1])
-- On a cluster a script may publish only in its keys' slot: the channel
-- must carry the key's hash tag (checked before anything is written).
local function tag(name)
  local open = string.find(name, '{', 1, true)
  if open then
    local close = string.find(name, '}', open + 1, true)
    if close and close > open + 1 then
      return string.sub(name, open + 1, close - 1)
    end
  end
  return name
end
if tag(ARGV[2]) ~= tag(KEYS[1]) then
  return redis.error_reply('BADARG channel must carry the hash tag of the lock key')
end
if owner == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SPUBLISH', ARGV[2], 'released')
  return 1
end
return 0
