#!lua
--- Take a permit of the semaphore if one is free, or renew the caller's own; a refused caller waits in the semaphore's queue
-- KEYS[1] permits zset rw: the holders: owner token -> the end of its lease (unix ms, server clock)
-- KEYS[2] queue zset rw: the waiters: token -> arrival (unix µs, server clock), first come first
-- KEYS[3] places zset rw: the waiters' places: token -> the end of its place (unix ms); a waiter whose place ended is skipped
-- ARGV[1] token string nonempty: the holder's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] limit integer 1..1000000: how many holders the semaphore allows at once (the same for every client of it)
-- ARGV[3] lease_ms integer 1..999999999999999: the permit's lease in milliseconds
-- ARGV[4] place_ms integer 0..999999999999999: how long a refused caller keeps its place in the queue unless its next
--    attempt renews it (0: a single attempt, it takes no place)
-- ARGV[5] fair bool: 1: free permits go to the first live waiters of the queue (arrival order): a caller with as many
--    live waiters ahead of it as there are free permits is refused; 0: whoever comes first while one is free
-- RETURNS integer: 1 when acquired (the caller leaves the queue), or renewed when the token already held a permit (a retry);
--    <= 0 when every permit is taken (or, fair, promised to waiters ahead): minus the ms until the first lease (or the
--    first waiter's place) ends; the caller has (or keeps) its place in the queue
-- WRITES PEXPIRE PEXPIREAT ZADD ZREM ZREMRANGEBYSCORE
-- READS TIME ZCOUNT ZRANGE ZSCORE
-- INCLUDE lease
-- INCLUDE queue
-- INCLUDE queue_place
-- IDEMPOTENT yes: a resend with the same token finds its permit and renews it (answers 1); a refused resend renews the
--    same place
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(now_us / 1000)
local after = '(' .. string.format('%d', now)
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
-- The caller's place, read whatever the path: the read checks the key's
-- type (the generated checks need no TYPE for it), and a caller with no
-- place has no queue entries to leave.
local queued = redis.call('ZSCORE', KEYS[3], ARGV[1])
-- A permit whose lease ended is free again (a holder that crashed).
local live = redis.call('ZCOUNT', KEYS[1], after, '+inf')
local free = tonumber(ARGV[2]) - live
local wait
if not (mine and tonumber(mine) > now) and ARGV[5] == '1' and free > 0 then
  local ahead, dead, at, ends = live_waiters(KEYS[2], KEYS[3], now, free, ARGV[1])
  drop_waiters(KEYS[2], KEYS[3], dead)
  if not at and #ahead >= free then
    wait = now - ends[1]
  end
end
if not wait and (mine and tonumber(mine) > now or free > 0) then
  take_lease(KEYS[1], ARGV[1], now, ARGV[3], live)
  if queued then
    leave_queue(KEYS[2], KEYS[3], ARGV[1])
  end
  return 1
end
if not wait then
  local first = redis.call('ZRANGE', KEYS[1], after, '+inf', 'BYSCORE', 'LIMIT', '0', '1', 'WITHSCORES')
  wait = now - tonumber(first[2])
end
if ARGV[4] ~= '0' then
  keep_place(KEYS[2], KEYS[3], ARGV[1], now, now_us, ARGV[4])
end
return wait
