--- A place in the waiter queue of a lock or a semaphore (see queue.lua), taken or renewed
-- WRITES PEXPIRE ZADD
-- READS PTTL

-- Gives `token` a place until `now + place_ms` (keeping its arrival
-- `now_us` when it has one already).
local function keep_place(queue, places, token, now, now_us, place_ms)
  local ms = tonumber(place_ms)
  redis.call('ZADD', queue, 'NX', string.format('%.0f', now_us), token)
  redis.call('ZADD', places, string.format('%.0f', now + ms), token)
  if redis.call('PTTL', queue) < ms then
    redis.call('PEXPIRE', queue, ms)
  end
  if redis.call('PTTL', places) < ms then
    redis.call('PEXPIRE', places, ms)
  end
end
