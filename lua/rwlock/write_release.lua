#!lua
--- Give the write lease back, only if the caller holds it, and withdraw the caller's intent to write; wakes the waiters
-- KEYS[1] writer string rw: the writer's token, its TTL the writer's lease
-- KEYS[2] intents zset rw: waiting writer token -> the end of its intent (unix ms)
-- ARGV[1] token string nonempty: the writer's token
-- ARGV[2] channel string tagged: the lock's wake-up channel, a shard channel with the keys' hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when the write lease was released, 0 when the token did not hold it (an intent of the token is withdrawn either way)
-- WRITES DEL ZREM
-- READS GET SPUBLISH ZSCORE
-- IDEMPOTENT yes: a second call finds the write lease gone and deletes nothing (it answers 0)
local held = redis.call('GET', KEYS[1]) == ARGV[1]
local intent = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not held and not intent then
  return 0
end
if held then
  redis.call('DEL', KEYS[1])
end
if intent then
  redis.call('ZREM', KEYS[2], ARGV[1])
end
redis.call('SPUBLISH', ARGV[2], 'released')
return held and 1 or 0
