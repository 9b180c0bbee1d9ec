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
-- IDEMPOTENT yes: a resend with the same token finds its permit and renews it (answers 1)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = '(' .. string.format('%.0f', now)
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
-- A permit whose lease ended is free again (a holder that crashed).
local live = redis.call('ZCOUNT', KEYS[1], after, '+inf')
if mine and tonumber(mine) > now or live < tonumber(ARGV[2]) then
  -- The set lives as long as its longest lease.
  local ends = now + tonumber(ARGV[3])
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  local expire = math.max(ends, tonumber(last[2]) or 0)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  redis.call('ZADD', KEYS[1], ends, ARGV[1])
  redis.call('PEXPIREAT', KEYS[1], expire)
  return 1
end
local first = redis.call('ZRANGE', KEYS[1], after, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
return now - tonumber(first[2])
