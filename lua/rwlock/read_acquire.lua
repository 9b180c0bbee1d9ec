#!lua
--- Take a read lease when no writer holds the lock or waits ahead of the caller, or renew the caller's own; a refused caller waits in the lock's queue
-- KEYS[1] writer string ro: the writer's token, its TTL the writer's lease
-- KEYS[2] readers zset rw: reader token -> the end of its lease (unix ms, server clock)
-- KEYS[3] intents zset rw: waiting writer token -> the end of its intent (unix ms); while a writer waits, new readers wait too
-- KEYS[4] queue zset rw: the waiters, readers and writers: token -> arrival (unix µs, server clock), first come first
-- KEYS[5] places zset rw: the waiters' places: token -> the end of its place (unix ms); a waiter whose place ended is skipped
-- ARGV[1] token string nonempty: the reader's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the read lease in milliseconds
-- ARGV[3] place_ms integer 0..999999999999999: how long a refused caller keeps its place in the queue unless its next
--    attempt renews it (0: a single attempt, it takes no place)
-- RETURNS integer: 1 when acquired (the caller leaves the queue), or renewed when the token already held a read lease (a
--    retry); <= 0 when a writer holds the lock, or waits for it ahead of the caller (a queued reader waits only for the
--    writers that arrived before it, a new one for any): minus the ms until that writer's lease or intent ends (0:
--    unknown); the caller has (or keeps) its place in the queue
-- WRITES PEXPIRE PEXPIREAT ZADD ZREM ZREMRANGEBYSCORE
-- READS GET PTTL TIME ZRANGE ZSCORE
-- INCLUDE lease
-- INCLUDE queue
-- INCLUDE queue_ahead
-- INCLUDE queue_place
-- IDEMPOTENT yes: a resend with the same token finds its read lease and renews it (answers 1); a refused resend renews
--    the same place
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(now_us / 1000)
local mine = redis.call('ZSCORE', KEYS[2], ARGV[1])
local wait
if not (mine and tonumber(mine) > now) then
  if redis.call('GET', KEYS[1]) then
    local pttl = redis.call('PTTL', KEYS[1])
    wait = pttl > 0 and -pttl or 0
  else
    -- A writer waiting ahead goes first: no writer starves behind new
    -- readers. (Intents that ended are those of writers that crashed.)
    local ends = writer_ahead(KEYS[4], KEYS[3], now, ARGV[1])
    if ends then
      wait = now - ends
    end
  end
end
if not wait then
  take_lease(KEYS[2], ARGV[1], now, ARGV[2])
  -- Intents that ended are gone too (writers that crashed).
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  leave_queue(KEYS[4], KEYS[5], ARGV[1])
  return 1
end
if ARGV[3] ~= '0' then
  keep_place(KEYS[4], KEYS[5], ARGV[1], now, now_us, ARGV[3])
end
return wait
