--- A place in the waiter queue of a lock or a semaphore (see queue.lua), taken or renewed
-- WRITES PEXPIRE ZADD

-- Gives `token` a place until `now + place_ms` (keeping its arrival
-- `now_us` when it has one already).
local function keep_place(queue, places, token, now, now_us, place_ms)
  local ms = tonumber(place_ms)
  redis.call('ZADD', queue, 'NX', string.format('%d', now_us), token)
  redis.call('ZADD', places, string.format('%d', now + ms), token)
  -- The keys live at least `ms` from now: NX gives a key with no TTL
  -- one, GT lengthens a shorter one (a write, where a PTTL read after the
  -- ZADDs would cost the scripts an ACL probe per key on every call).
  redis.call('PEXPIRE', queue, ms, 'NX')
  redis.call('PEXPIRE', queue, ms, 'GT')
  redis.call('PEXPIRE', places, ms, 'NX')
  redis.call('PEXPIRE', places, ms, 'GT')
end
