#!lua
--- Give a read lease back, only if the caller holds it; the last reader out wakes the next waiter (a writer, or the readers at the queue's head); a caller that waits in the queue leaves it
-- KEYS[1] writer string ro: the writer's token, its TTL the writer's lease
-- KEYS[2] readers zset rw: reader token -> the end of its lease (unix ms, server clock)
-- KEYS[3] intents zset ro: waiting writer token -> the end of its intent (unix ms)
-- KEYS[4] queue zset rw: the waiters: token -> arrival (unix µs, server clock)
-- KEYS[5] places zset rw: the waiters' places: token -> the end of its place (unix ms)
-- ARGV[1] token string nonempty: the reader's token
-- ARGV[2] channel string tagged: the lock's wake-up channel, a shard channel with the keys' hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when released, 0 when the token held no read lease (or its lease had ended; a place of the token in
--    the queue is given up either way); a message on the channel wakes, while no writer holds the lock, the run of live
--    readers at the head of the queue (each its token, at most 64), or, when no reader is left, the first live waiter if
--    it waits to write, or `released` (every waiter) when the queue has none
-- WRITES ZREM ZREMRANGEBYSCORE
-- READS GET SPUBLISH TIME ZCOUNT ZRANGE ZSCORE
-- INCLUDE clock
-- INCLUDE lease_release
-- INCLUDE queue_release
-- INCLUDE queue_wake
-- IDEMPOTENT yes: a second call finds no read lease of the token and the token out of the queue: it removes nothing (it
--    answers 0)
local queued = redis.call('ZSCORE', KEYS[4], ARGV[1])
local live, now = release_lease(KEYS[2], ARGV[1])
if live == nil and not queued then
  return 0
end
now = now or now_ms()
-- The other readers with a live lease (this one's is gone).
local others = redis.call('ZCOUNT', KEYS[2], '(' .. string.format('%d', now), '+inf')
local held = redis.call('GET', KEYS[1])
local run, writes, dead = next_run(KEYS[4], KEYS[5], KEYS[3], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
release_queue(KEYS[4], KEYS[5], ARGV[1], queued, dead)
wake_run(ARGV[2], run, writes, held, others)
return live and 1 or 0
