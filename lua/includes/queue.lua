--- The waiter queue of a lock or a semaphore: tokens in arrival order, each with a place that ends unless renewed
-- WRITES ZREM
-- READS ZRANGE ZSCORE

-- `queue` is a sorted set token -> arrival (unix µs, the server's clock;
-- the first arrival is kept), `places` token -> the end of its place
-- (unix ms). A waiter whose place ended (it crashed, gave up, or was held
-- up longer than its place) is skipped and dropped. Both keys live as
-- long as their longest place.

-- The first `n` live waiters in arrival order other than `skip`, as a
-- list, the dead ones met on the way, and, when `skip` was met before
-- the n-th other, 1 + the number of live waiters ahead of it (nil
-- otherwise); reads at most 64 entries.
local function live_waiters(queue, places, now, n, skip)
  local live, dead, at = {}, {}, nil
  if n < 1 then
    return live, dead, at
  end
  local entries = redis.call('ZRANGE', queue, 0, 63)
  for _, t in ipairs(entries) do
    local ends = redis.call('ZSCORE', places, t)
    if not ends or tonumber(ends) <= now then
      dead[#dead + 1] = t
    elseif t == skip then
      at = #live + 1
    else
      live[#live + 1] = t
      if #live >= n then
        break
      end
    end
  end
  return live, dead, at
end

-- Drops the dead waiters `dead` (from live_waiters).
local function drop_waiters(queue, places, dead)
  for _, t in ipairs(dead) do
    redis.call('ZREM', queue, t)
    redis.call('ZREM', places, t)
  end
end

-- Takes `token` out of the queue (it got what it waited for, or left).
local function leave_queue(queue, places, token)
  redis.call('ZREM', queue, token)
  redis.call('ZREM', places, token)
end
