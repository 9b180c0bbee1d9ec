#!lua
--- Give a read lease back, only if the caller holds it; the last reader out wakes the waiters
-- KEYS[1] readers zset rw: reader token -> the end of its lease (unix ms, server clock)
-- ARGV[1] token string nonempty: the reader's token
-- ARGV[2] channel string tagged: the lock's wake-up channel, a shard channel with the keys' hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when released, 0 when the token held no read lease (or its lease had ended)
-- WRITES ZREM ZREMRANGEBYSCORE
-- READS SPUBLISH TIME ZCOUNT ZSCORE
-- INCLUDE clock
-- IDEMPOTENT yes: a second call finds no read lease of the token and removes nothing (it answers 0)
local ends = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not ends then
  return 0
end
local now = now_ms()
local live = tonumber(ends) > now
-- Readers with a live lease, this one included when its lease is live.
local others = redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.0f', now), '+inf') - (live and 1 or 0)
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if others == 0 then
  redis.call('SPUBLISH', ARGV[2], 'released')
end
return live and 1 or 0
