#!lua
--- Give a read lease back, only if the caller holds it; the last reader out wakes the waiters
-- KEYS[1] readers zset rw: reader token -> the end of its lease (unix ms, server clock)
-- ARGV[1] token string nonempty: the reader's token
-- ARGV[2] channel string tagged: the lock's wake-up channel, a shard channel with the keys' hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when released, 0 when the token held no read lease (or its lease had ended)
-- WRITES ZREM ZREMRANGEBYSCORE
-- READS SPUBLISH TIME ZCOUNT ZSCORE
-- INCLUDE lease_release
-- IDEMPOTENT yes: a second call finds no read lease of the token and removes nothing (it answers 0)
local live, now = release_lease(KEYS[1], ARGV[1])
if live == nil then
  return 0
end
-- The other readers with a live lease (this one's is gone).
local others = redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.0f', now), '+inf')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if others == 0 then
  redis.call('SPUBLISH', ARGV[2], 'released')
end
return live and 1 or 0
