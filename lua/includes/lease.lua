--- Give a token a lease in a sorted set of leases (token -> the end of its lease, unix ms), trimming the ended ones
-- WRITES PEXPIREAT ZADD ZREMRANGEBYSCORE

-- Leases that ended at `now` are gone (holders that crashed); the token's
-- lease ends `lease_ms` after `now`, and the set lives at least as long as
-- its longest lease: NX gives a set with no TTL one, GT lengthens a
-- shorter one (two writes, where reading the longest lease back costs a
-- ZRANGE and its reply). The end is formatted once ('%d': Redis 7.0
-- formats a number argument with '%.17g'). `live`, when the caller
-- counted them at `now`: the leases that end after `now`. None: the trim
-- leaves no set and the ZADD makes a new one, which only NX can give a
-- TTL; some: the set lives on with the TTL the lease that made it gave it,
-- which only GT can lengthen. One PEXPIREAT then does.
local function take_lease(key, token, now, lease_ms, live)
  local ends = string.format('%d', now + tonumber(lease_ms))
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  redis.call('ZADD', key, ends, token)
  if live ~= 0 then
    redis.call('PEXPIREAT', key, ends, 'GT')
  end
  if not (live and live > 0) then
    redis.call('PEXPIREAT', key, ends, 'NX')
  end
end
