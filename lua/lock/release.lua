#!lua
--- Release the lock, only if the caller still owns it, and wake the next waiter; a caller that waits in the queue leaves it
-- KEYS[1] lock string rw: the lock
-- KEYS[2] queue zset rw: the waiters: token -> arrival (unix µs, server clock)
-- KEYS[3] places zset rw: the waiters' places: token -> the end of its place (unix ms)
-- ARGV[1] token string nonempty: the owner's token
-- ARGV[2] channel string tagged: the lock's wake-up channel, a shard channel with the lock key's hash tag (`<lock>:wake` in the Rust API)
-- RETURNS integer: 1 when released, 0 when the lock is not held with this token (a place of the token in the queue is
--    given up either way); when the lock is free afterwards, a message on the channel wakes the first live waiter: its
--    token, or `released` (every waiter) when the queue has none
-- WRITES DEL ZREM
-- READS GET SPUBLISH TIME ZRANGE ZSCORE
-- INCLUDE queue
-- INCLUDE queue_release
-- IDEMPOTENT yes: a second call finds the lock gone (or held by another owner) and the token out of the queue: it
--    deletes nothing and publishes nothing (it answers 0)

-- The lock and the caller's place are read first, and the queue whenever
-- the release gets past them: each read checks its key's type, so the
-- generated checks need no TYPE. The clock is read only when the queue has
-- waiters.
local owner = redis.call('GET', KEYS[1])
local queued = redis.call('ZSCORE', KEYS[3], ARGV[1])
local held = owner == ARGV[1]
if not held and not queued then
  return 0
end
local next_up, dead = live_waiters(KEYS[2], KEYS[3], nil, 1, ARGV[1])
if held then
  redis.call('DEL', KEYS[1])
end
release_queue(KEYS[2], KEYS[3], ARGV[1], queued, dead)
if held or not owner then
  redis.call('SPUBLISH', ARGV[2], next_up[1] or 'released')
end
return held and 1 or 0
