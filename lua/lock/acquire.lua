#!lua
--- Take the lock if it is free, or give its owner the same fencing token again, and return the fencing token; a refused caller waits in the lock's queue
-- KEYS[1] lock string rw: the lock; its value is the owner's token, its TTL the lease
-- KEYS[2] fence string rw: the last fencing token handed out (never expires); while the lock is held, its holder's
-- KEYS[3] queue zset rw: the waiters: token -> arrival (unix µs, server clock), first come first
-- KEYS[4] places zset rw: the waiters' places: token -> the end of its place (unix ms); a waiter whose place ended is skipped
-- ARGV[1] token string nonempty: the new owner's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the lease in milliseconds
-- ARGV[3] place_ms integer 0..999999999999999: how long a refused caller keeps its place in the queue unless its next
--    attempt renews it (0: a single attempt, it takes no place)
-- ARGV[4] fair bool: 1: the lock goes to the first live waiter of the queue (arrival order): a caller behind another
--    live waiter is refused even when the lock is free; 0: whoever comes first while it is free
-- ARGV[5..] now_us integer 0..4102444800000000: at most one: the time in unix microseconds to use instead of the server's TIME
--    (tests of a clock offset between nodes; production leaves it out)
-- RETURNS integer: > 0 when acquired: the fencing token, max(last + 1, the server's clock in unix microseconds): greater than
--    any earlier one of this lock, also after a failover to a replica that missed increments, as long as the nodes' clocks
--    differ by less than the failover took; the caller leaves the queue;
--    when the lock is already held with this token (a retry whose reply was lost): the same fencing token, with a fresh lease;
--    <= 0 when another owner holds it: minus the holder's remaining lease in ms (0 when it has no TTL), or (fair, free
--    lock) minus the remaining place of the first waiter; the caller has (or keeps) its place in the queue
-- WRITES PEXPIRE SET ZADD ZREM
-- READS GET PTTL TIME ZRANGE ZSCORE
-- ERRORS BADARG
-- INCLUDE call_time
-- INCLUDE queue
-- INCLUDE queue_place
-- IDEMPOTENT yes: a resend with the same token finds the lock held by it and answers the same fencing token
--    with a fresh lease (after the lease ran out: a new fencing token, or busy when another owner took it); a refused
--    resend renews the same place

-- The largest integer a Lua number holds exactly.
local max_fence = 9007199254740991

-- The last fencing token of the fence key's value `v`, or nil and the
-- refusal of a value that is none (an INCR counter of an older version is
-- one: the next token jumps past it to the clock).
local function last_fence(v)
  if not v then
    return 0
  end
  local n = tonumber(v)
  if not n or n < 0 or n >= max_fence or n ~= math.floor(n) then
    return nil, redis.error_reply('BADARG fence holds a value that is no fencing token (an integer from 0 to 2^53 - 2)')
  end
  return n
end

-- Every check comes before the first write. The lock, the fence and the
-- caller's place are read first, whatever the path: each read checks its
-- key's type, so the generated checks need no TYPE for them.
local now_us, refused = call_time_us(ARGV, 5)
if refused then
  return refused
end
local now = math.floor(now_us / 1000)
local owner = redis.call('GET', KEYS[1])
local stored = redis.call('GET', KEYS[2])
local queued = redis.call('ZSCORE', KEYS[4], ARGV[1])
local held = tonumber(stored)
-- The caller takes the lock with `fence`, or waits `wait`.
local fence, wait
if not owner then
  local last, bad = last_fence(stored)
  if bad then
    return bad
  end
  if ARGV[4] == '1' then
    local ahead, dead, at, ends = live_waiters(KEYS[3], KEYS[4], now, 1, ARGV[1])
    drop_waiters(KEYS[3], KEYS[4], dead)
    if not at and ahead[1] then
      -- Fair: the first live waiter is another; the caller waits for it
      -- (at most until its place ends).
      wait = now - ends[1]
    end
  end
  if not wait then
    fence = math.max(last + 1, now_us)
    redis.call('SET', KEYS[2], string.format('%d', fence))
  end
elseif owner == ARGV[1] and held and held >= 1 then
  -- Only a free lock takes a new token, so while the lock is held the
  -- fence key holds its holder's fencing token.
  fence = held
else
  local pttl = redis.call('PTTL', KEYS[1])
  wait = pttl > 0 and -pttl or 0
end
if fence then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if queued then
    leave_queue(KEYS[3], KEYS[4], ARGV[1])
  end
  return fence
end
if ARGV[3] ~= '0' then
  keep_place(KEYS[3], KEYS[4], ARGV[1], now, now_us, ARGV[3])
end
return wait
