#!lua
--- Give a permit back, only if the caller holds it, and wake as many waiters as permits are free; a caller that waits in the queue leaves it
-- KEYS[1] permits zset rw: the holders: owner token -> the end of its lease (unix ms)
-- KEYS[2] queue zset rw: the waiters: token -> arrival (unix µs, server clock)
-- KEYS[3] places zset rw: the waiters' places: token -> the end of its place (unix ms)
-- ARGV[1] token string nonempty: the holder's token
-- ARGV[2] limit integer 1..1000000: how many holders the semaphore allows at once
-- ARGV[3] channel string tagged: the semaphore's wake-up channel, a shard channel with the key's hash tag (`<key>:wake` in the Rust API)
-- RETURNS integer: 1 when released, 0 when the token held no permit (or its lease had ended; a place of the token in the
--    queue is given up either way); a message on the channel wakes each of the first live waiters, one per free permit
--    (at most 64): its token, or `released` (every waiter) when the queue has none
-- WRITES ZREM
-- READS SPUBLISH TIME ZCOUNT ZRANGE ZSCORE
-- INCLUDE clock
-- INCLUDE queue
-- INCLUDE queue_release
-- IDEMPOTENT yes: a second call finds no permit of the token and the token out of the queue: it removes nothing (it answers 0)
-- Everything the release reads comes before its first write: the caller's
-- permit and place, the clock, the live count and the queue head. Each read
-- checks its key's type and a denied read stops the call before anything is
-- written, so the generated checks test only the writes and the publish.
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
local queued = redis.call('ZSCORE', KEYS[3], ARGV[1])
if not mine and not queued then
  return 0
end
local now = now_ms()
local live = mine and tonumber(mine) > now
-- The live holders counted before the caller's permit goes: a live one of
-- its own is free once it is removed.
local held = redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', now), '+inf')
local free = tonumber(ARGV[2]) - held + (live and 1 or 0)
local next_up, dead = live_waiters(KEYS[2], KEYS[3], now, math.min(free, 64), ARGV[1])
if mine then
  redis.call('ZREM', KEYS[1], ARGV[1])
end
release_queue(KEYS[2], KEYS[3], ARGV[1], queued, dead)
if free > 0 then
  if next_up[1] then
    for _, t in ipairs(next_up) do
      redis.call('SPUBLISH', ARGV[3], t)
    end
  else
    redis.call('SPUBLISH', ARGV[3], 'released')
  end
end
return live and 1 or 0
