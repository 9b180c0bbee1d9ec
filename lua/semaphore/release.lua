#!lua
--- Give a permit back, only if the caller holds it, and wake the waiters
-- KEYS[1] permits zset rw: the holders: owner token -> the end of its lease (unix ms)
-- ARGV[1] token string nonempty: the holder's token
-- ARGV[2] channel string nonempty: the semaphore's wake-up channel, a shard channel with the key's hash tag (`<key>:wake` in the Rust API)
-- RETURNS integer: 1 when released (a message on the channel wakes the waiters), 0 when the token held no permit (or its lease had ended)
-- WRITES ZREM
-- READS SPUBLISH TIME ZSCORE
-- ERRORS BADARG
local ends = redis.call('ZSCORE', KEYS[1], ARGV[1])
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
  return redis.error_reply('BADARG channel must carry the hash tag of the semaphore key')
end
if not ends then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
if tonumber(ends) <= now then
  return 0
end
redis.call('SPUBLISH', ARGV[2], 'released')
return 1
