#!lua
--- Give the write lease back, only if the caller holds it, and withdraw the caller's intent and place; wakes the next waiter (a writer, or the readers at the queue's head)
-- KEYS[1] writer string rw: the writer's token, its TTL the writer's lease
-- KEYS[2] readers zset ro: reader token -> the end of its lease (unix ms, server clock)
-- KEYS[3] intents zset rw: waiting writer token -> the end of its intent (unix ms)
-- KEYS[4] queue zset rw: the waiters: token -> arrival (unix µs, server clock)
-- KEYS[5] places zset rw: the waiters' places: token -> the end of its place (unix ms)
-- ARGV[1] token string nonempty: the writer's token
-- ARGV[2] channel string tagged: the lock's wake-up channel, a shard channel with the keys' hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when the write lease was released, 0 when the token did not hold it (an intent and a place of the
--    token are withdrawn either way); a message on the channel wakes, while no writer holds the lock, the run of live
--    readers at the head of the queue (each its token, at most 64), or, when no reader holds it either, the first live
--    waiter if it waits to write, or `released` (every waiter) when the queue has none
-- WRITES DEL ZREM
-- READS GET SPUBLISH TIME ZCOUNT ZRANGE ZSCORE
-- INCLUDE clock
-- INCLUDE queue_release
-- INCLUDE queue_wake
-- IDEMPOTENT yes: a second call finds the write lease gone and the token out of the queue: it deletes nothing (it
--    answers 0)
local owner = redis.call('GET', KEYS[1])
local held = owner == ARGV[1]
local intent = redis.call('ZSCORE', KEYS[3], ARGV[1])
local queued = redis.call('ZSCORE', KEYS[4], ARGV[1])
if not held and not intent and not queued then
  return 0
end
local now = now_ms()
local readers = redis.call('ZCOUNT', KEYS[2], '(' .. string.format('%d', now), '+inf')
local run, writes, dead = next_run(KEYS[4], KEYS[5], KEYS[3], now, ARGV[1])
if held then
  redis.call('DEL', KEYS[1])
end
if intent then
  redis.call('ZREM', KEYS[3], ARGV[1])
end
release_queue(KEYS[4], KEYS[5], ARGV[1], queued, dead)
wake_run(ARGV[2], run, writes, owner and not held, readers)
return held and 1 or 0
