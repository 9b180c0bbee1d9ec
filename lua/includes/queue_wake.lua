--- Whom a release of the read-write lock wakes: a writer alone, or the readers at the head of its queue (queue.lua)
-- INCLUDE queue
-- INCLUDE queue_role
-- READS SPUBLISH TIME ZRANGE ZSCORE

-- The waiters a release may wake, other than `skip`: the first live
-- waiter when it waits to write (alone; `writes` true), or the run of
-- live readers at the head of the queue up to the first writer (at most
-- 64); and the dead waiters met on the way (for drop_waiters).
local function next_run(queue, places, intents, now, skip)
  local live, dead = live_waiters(queue, places, now, 64, skip)
  local run = {}
  for _, t in ipairs(live) do
    if waits_to_write(intents, t, now) then
      if not run[1] then
        return { t }, true, dead
      end
      break
    end
    run[#run + 1] = t
  end
  return run, false, dead
end

-- Wakes, on `channel`, the run (next_run) that can have the lock as it is
-- now: readers unless a writer holds it (`held`), a writer only when no
-- one holds it (`held` false and no live `readers`); `released` when no
-- one waits in the queue and no one holds the lock.
local function wake_run(channel, run, writes, held, readers)
  if held or (writes and readers > 0) then
    return
  end
  if not run[1] then
    if readers == 0 then
      redis.call('SPUBLISH', channel, 'released')
    end
    return
  end
  for _, t in ipairs(run) do
    redis.call('SPUBLISH', channel, t)
  end
end
