--- Give a token's lease in a sorted set of leases back: remove it, telling whether it was still live
-- INCLUDE clock
-- WRITES ZREM
-- READS TIME ZSCORE

-- The semaphore's and the rwlock's readers' release. Returns nil when the
-- token holds no lease (nothing is removed); otherwise removes it and
-- returns whether its lease had not ended yet, and the time (unix ms, the
-- server's clock).
local function release_lease(key, token)
  local ends = redis.call('ZSCORE', key, token)
  if not ends then
    return nil
  end
  local now = now_ms()
  redis.call('ZREM', key, token)
  return tonumber(ends) > now, now
end
