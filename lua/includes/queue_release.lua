--- What a release writes to the waiter queue of a lock or a semaphore: the caller's place given up, the dead waiters dropped (queue.lua)
-- INCLUDE queue
-- WRITES ZREM

-- Takes `token` out of the queue when it was `queued` (its place read
-- before), then drops the dead waiters `dead` (from live_waiters).
local function release_queue(queue, places, token, queued, dead)
  if queued then
    leave_queue(queue, places, token)
  end
  drop_waiters(queue, places, dead)
end
