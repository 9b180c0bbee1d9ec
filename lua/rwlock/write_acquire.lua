#!lua
--- Take the write lease when no one holds the lock, or renew the caller's own; a refused caller records its intent to write and waits in the lock's queue
-- KEYS[1] writer string rw: the writer's token, its TTL the writer's lease
-- KEYS[2] readers zset ro: reader token -> the end of its lease (unix ms, server clock)
-- KEYS[3] intents zset rw: waiting writer token -> the end of its intent (unix ms); while a writer waits, new readers wait too
-- KEYS[4] queue zset rw: the waiters, readers and writers: token -> arrival (unix µs, server clock), first come first
-- KEYS[5] places zset rw: the waiters' places: token -> the end of its place (unix ms); a waiter whose place ended is skipped
-- ARGV[1] token string nonempty: the writer's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the write lease in milliseconds
-- ARGV[3] place_ms integer 0..999999999999999: how long a refused caller keeps its place in the queue, and its intent
--    keeps new readers out, unless its next attempt renews them (0: a single attempt, it takes neither)
-- ARGV[4] fair bool: 1: a free lock goes to the caller only when no other live waiter (reader or writer) is ahead of it
--    in the queue (arrival order); 0: whoever comes first while it is free
-- RETURNS integer: 1 when acquired (the caller's intent and place are gone), or renewed when the token already held the
--    write lease (a retry); <= 0 when the lock is held: minus the ms until the writer's lease or the first reader's lease
--    ends (0: unknown), or (fair, free lock) minus the remaining place of the first waiter; the caller has (or keeps) its intent and its place in the queue
-- WRITES PEXPIRE PEXPIREAT SET ZADD ZREM ZREMRANGEBYSCORE
-- READS GET PTTL TIME ZRANGE ZSCORE
-- INCLUDE lease
-- INCLUDE queue
-- INCLUDE queue_place
-- IDEMPOTENT yes: a resend with the same token finds its write lease (or its intent and place) and renews it
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(now_us / 1000)
local after = '(' .. string.format('%d', now)
local owner = redis.call('GET', KEYS[1])
-- Readers whose lease ended are gone (a reader that crashed).
local reader = redis.call('ZRANGE', KEYS[2], after, '+inf', 'BYSCORE', 'LIMIT', '0', '1', 'WITHSCORES')
local wait
if owner and owner ~= ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  wait = pttl > 0 and -pttl or 0
elseif not owner and reader[2] then
  wait = now - tonumber(reader[2])
elseif not owner and ARGV[4] == '1' then
  local ahead, dead, at = live_waiters(KEYS[4], KEYS[5], now, 1, ARGV[1])
  drop_waiters(KEYS[4], KEYS[5], dead)
  if not at and ahead[1] then
    -- Fair: the first live waiter is another; the caller waits for it
    -- (at most until its place ends).
    wait = now - tonumber(redis.call('ZSCORE', KEYS[5], ahead[1]))
  end
end
if not wait then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  leave_queue(KEYS[4], KEYS[5], ARGV[1])
  return 1
end
if ARGV[3] ~= '0' then
  -- The caller's intent, renewed (intents that ended are gone).
  take_lease(KEYS[3], ARGV[1], now, ARGV[3])
  keep_place(KEYS[4], KEYS[5], ARGV[1], now, now_us, ARGV[3])
end
return wait
