--- Give a token's lease in a sorted set of leases a fresh end, only if it has not ended
-- INCLUDE clock
-- WRITES PEXPIREAT ZADD
-- READS TIME ZRANGE ZSCORE

-- The semaphore's and the rwlock's readers' extend: the lease ends
-- `lease_ms` from now (the server's clock), and the set lives as long as
-- its longest lease. Returns 1 when extended, 0 when the token holds no
-- live lease.
local function extend_lease(key, token, lease_ms)
  local now = now_ms()
  local ends = redis.call('ZSCORE', key, token)
  if not ends or tonumber(ends) <= now then
    return 0
  end
  redis.call('ZADD', key, 'XX', now + tonumber(lease_ms), token)
  local last = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
  redis.call('PEXPIREAT', key, last[2])
  return 1
end
