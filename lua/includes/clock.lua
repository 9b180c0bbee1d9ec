--- The server's clock in unix milliseconds (TIME)
-- READS TIME

-- The leases of the semaphore and the rwlock are on the server's clock,
-- so that clients with skewed clocks still agree on them.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
