#!lua
--- Take the lock if it is free, or give its owner the same fencing token again, and return the fencing token
-- KEYS[1] lock string rw: the lock; its value is the owner's token, its TTL the lease
-- KEYS[2] fence string rw: the last fencing token handed out (never expires); while the lock is held, its holder's
-- ARGV[1] token string nonempty: the new owner's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the lease in milliseconds
-- ARGV[3..] now_us integer 0..4102444800000000: at most one: the time in unix microseconds to use instead of the server's TIME
--    (tests of a clock offset between nodes; production leaves it out)
-- RETURNS integer: > 0 when acquired: the fencing token, max(last + 1, the server's clock in unix microseconds): greater than
--    any earlier one of this lock, also after a failover to a replica that missed increments, as long as the nodes' clocks
--    differ by less than the failover took;
--    when the lock is already held with this token (a retry whose reply was lost): the same fencing token, with a fresh lease;
--    <= 0 when another owner holds it: minus the holder's remaining lease in ms (0 when it has no TTL)
-- WRITES SET
-- READS GET PTTL TIME
-- ERRORS BADARG
-- INCLUDE call_time
-- IDEMPOTENT yes: a resend with the same token finds the lock held by it and answers the same fencing token
--    with a fresh lease (after the lease ran out: a new fencing token, or busy when another owner took it)

-- The largest integer a Lua number holds exactly.
local max_fence = 9007199254740991

-- The last fencing token, or nil and the refusal of a value that is none
-- (an INCR counter of an older version is one: the next token jumps
-- past it to the clock).
local function last_fence()
  local v = redis.call('GET', KEYS[2])
  if not v then
    return 0
  end
  local n = tonumber(v)
  if not n or n < 0 or n >= max_fence or n ~= math.floor(n) then
    return nil, redis.error_reply('BADARG fence holds a value that is no fencing token (an integer from 0 to 2^53 - 2)')
  end
  return n
end

local owner = redis.call('GET', KEYS[1])
if not owner then
  -- Both checks come before the first write.
  local now_us, refused = call_time_us(ARGV, 3)
  if refused then
    return refused
  end
  local last, bad = last_fence()
  if bad then
    return bad
  end
  local fence = math.max(last + 1, now_us)
  redis.call('SET', KEYS[2], string.format('%.0f', fence))
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return fence
end
if owner == ARGV[1] then
  -- Only a free lock takes a new token, so while the lock is held the
  -- fence key holds its holder's fencing token.
  local fence = tonumber(redis.call('GET', KEYS[2]))
  if fence and fence >= 1 then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return fence
  end
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  return -pttl
end
return 0
