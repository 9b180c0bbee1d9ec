#!lua
--- Take a permit of the semaphore if one is free, or renew the caller's own
-- KEYS[1] permits zset rw: the holders: owner token -> the end of its lease (unix ms, server clock)
-- ARGV[1] token string nonempty: the holder's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] limit integer 1..1000000: how many holders the semaphore allows at once (the same for every client of it)
-- ARGV[3] lease_ms integer 1..999999999999999: the permit's lease in milliseconds
-- RETURNS integer: 1 when acquired, or renewed when the token already held a permit (a retry);
--    <= 0 when every permit is taken: minus the ms until the first lease ends
-- WRITES PEXPIREAT ZADD ZREMRANGEBYSCORE
-- READS TIME ZCARD ZRANGE ZSCORE
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A permit whose lease ended is free again (a holder that crashed).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  -- The set lives as long as its longest lease.
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[1], last[2])
  return 1
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return now - tonumber(first[2])
