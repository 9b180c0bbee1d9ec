#!lua
--- Give a holder's permit a fresh lease, only if its lease has not ended
-- KEYS[1] permits zset rw: the holders: owner token -> the end of its lease (unix ms)
-- ARGV[1] token string nonempty: the holder's token
-- ARGV[2] lease_ms integer 1..999999999999999: the new lease in milliseconds from now
-- RETURNS integer: 1 when extended, 0 when the token holds no live permit
-- WRITES PEXPIREAT ZADD
-- READS TIME ZRANGE ZSCORE
-- IDEMPOTENT yes: a resend sets the same lease again
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not ends or tonumber(ends) <= now then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
