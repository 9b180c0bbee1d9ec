--- Give a token a lease in a sorted set of leases (token -> the end of its lease, unix ms), trimming the ended ones
-- WRITES PEXPIREAT ZADD ZREMRANGEBYSCORE
-- READS ZRANGE

-- Leases that ended at `now` are gone (holders that crashed); the token's
-- lease ends `lease_ms` after `now`, and the set lives as long as its
-- longest lease.
local function take_lease(key, token, now, lease_ms)
  local ends = now + tonumber(lease_ms)
  local last = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
  local expire = math.max(ends, tonumber(last[2]) or 0)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  redis.call('ZADD', key, ends, token)
  redis.call('PEXPIREAT', key, expire)
end
