--- Give a token a lease in a sorted set of leases (token -> the end of its lease, unix ms), trimming the ended ones
-- WRITES PEXPIREAT ZADD ZREMRANGEBYSCORE

-- Leases that ended at `now` are gone (holders that crashed); the token's
-- lease ends `lease_ms` after `now`, and the set lives at least as long as
-- its longest lease: NX gives a set with no TTL one, GT lengthens a
-- shorter one (two writes, where reading the longest lease back costs a
-- ZRANGE and its reply). The end is formatted once ('%d': Redis 7.0
-- formats a number argument with '%.17g').
local function take_lease(key, token, now, lease_ms)
  local ends = string.format('%d', now + tonumber(lease_ms))
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  redis.call('ZADD', key, ends, token)
  redis.call('PEXPIREAT', key, ends, 'NX')
  redis.call('PEXPIREAT', key, ends, 'GT')
end
