--- The role of a waiter in the read-write lock's queue (queue.lua): whether it waits to write
-- READS ZSCORE

-- A waiter waits to write when it has an intent (`intents`: token -> the
-- end of its intent, unix ms) that has not ended; the other waiters wait
-- to read.
local function waits_to_write(intents, token, now)
  local ends = redis.call('ZSCORE', intents, token)
  return ends and tonumber(ends) > now
end
