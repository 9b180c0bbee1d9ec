--- The waiter queue of a lock or a semaphore: tokens in arrival order, each with a place that ends unless renewed
-- INCLUDE clock
-- WRITES ZREM
-- READS TIME ZRANGE ZSCORE

-- `queue` is a sorted set token -> arrival (unix µs, the server's clock;
-- the first arrival is kept), `places` token -> the end of its place
-- (unix ms). A waiter whose place ended (it crashed, gave up, or was held
-- up longer than its place) is skipped and dropped. Both keys live as
-- long as their longest place.

-- The first `n` live waiters in arrival order other than `skip`, as a
-- list, the dead ones met on the way, when `skip` was met before the n-th
-- other 1 + the number of live waiters ahead of it (nil otherwise), and
-- the ends of the live ones' places (unix ms); reads at most 64 entries.
-- `now` (unix ms) nil: the server's clock, read only when the queue has
-- entries. The queue is read whenever this runs (n < 1 finds none).
local function live_waiters(queue, places, now, n, skip)
  local live, dead, at, ends = {}, {}, nil, {}
  local entries = redis.call('ZRANGE', queue, '0', '63')
  local at_ms = now or (entries[1] and now_ms())
  for _, t in ipairs(entries) do
    if #live >= n then
      break
    end
    local place = tonumber(redis.call('ZSCORE', places, t))
    if not place or place <= at_ms then
      dead[#dead + 1] = t
    elseif t == skip then
      at = #live + 1
    else
      live[#live + 1] = t
      ends[#ends + 1] = place
    end
  end
  return live, dead, at, ends
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
