#!lua
--- Take a permit of the semaphore if one is free, or renew the caller's own
-- KEYS[1] permits zset rw: the holders: owner token -> the end of its lease (unix ms, server clock)
-- ARGV[1] token string nonempty: the holder's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] limit integer 1..1000000: how many holders the semaphore allows at once (the same for every client of it)
-- ARGV[3] lease_ms integer 1..999999999999999: the permit's lease in milliseconds
-- RETURNS integer: 1 when acquired, or renewed when the token already held a permit (a retry);
--    <= 0 when every permit is taken: minus the ms until the first lease ends
-- WRITES PEXPIREAT ZADD ZREMRANGEBYSCORE
-- READS TIME ZCOUNT ZRANGE ZSCORE
-- INCLUDE clock
-- INCLUDE lease
-- IDEMPOTENT yes: a resend with the same token finds its permit and renews it (answers 1)
local now = now_ms()
local after = '(' .. string.format('%.0f', now)
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
-- A permit whose lease ended is free again (a holder that crashed).
local live = redis.call('ZCOUNT', KEYS[1], after, '+inf')
if mine and tonumber(mine) > now or live < tonumber(ARGV[2]) then
  take_lease(KEYS[1], ARGV[1], now, ARGV[3])
  return 1
end
local first = redis.call('ZRANGE', KEYS[1], after, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
return now - tonumber(first[2])
