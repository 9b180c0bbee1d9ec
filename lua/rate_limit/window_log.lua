#!lua
--- Sliding log: take quantity units if at most limit - quantity entries lie in the last window; one entry per unit, expired ones trimmed in the same call; CL.THROTTLE's reply
-- KEYS[1] log zset rw: one entry per unit taken in the last window, scored by its time in unix microseconds; at most limit entries;
--    it expires when its newest entry leaves the window
-- ARGV[1] limit integer 1..100000: units allowed in any window
-- ARGV[2] window_ms integer 1..999999999999: the window in milliseconds
-- ARGV[3] quantity integer 0..limit: units to take; 0 takes none (expired entries are still trimmed)
-- ARGV[4..] now_us integer 0..4102444800000000: at most one: the time in unix microseconds to use instead of the server's TIME
--    (tests and replays; production leaves it out; the key still expires by the server's clock)
-- RETURNS integers: {limited, limit, remaining, retry_after_ms, reset_after_ms}: limited is 1 when the units were refused, 0 when taken;
--    remaining is how many units could be taken right after this call; retry_after_ms is how long until this quantity would be
--    allowed (-1 when allowed); reset_after_ms is how long until the newest entry leaves the window (both rounded up)
-- WRITES PEXPIREAT ZADD ZREMRANGEBYRANK ZREMRANGEBYSCORE
-- READS TIME ZCARD ZRANGE
-- ERRORS BADARG
-- INCLUDE call_time
-- IDEMPOTENT no: a resend would take the units a second time

-- Integer division is exact with math.floor / math.ceil here: every value
-- is an integer from 0 to below 2^53, and a / b then lies at least 1 / b
-- from any integer it is not, farther than a double's rounding error.

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
local quantity = tonumber(ARGV[3])
local now, refused = call_time_us(ARGV, 4)
if refused then
  return refused
end

local n = redis.call('ZCARD', KEYS[1])
local newest = redis.call('ZRANGE', KEYS[1], '-1', '-1', 'WITHSCORES')
-- The log's clock never runs backwards (entry names stay unique): after a
-- clock step back, the newest entry's time stands for now.
local last = tonumber(newest[2])
if last and last > now and last <= 5e15 then
  now = last
end
-- The window is (now - window, now]: an entry leaves it window_ms after it was taken.
n = n - redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now - window))
if n > limit then
  -- At most limit entries, even after a writer with a larger limit.
  n = n - redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(limit + 1))
end
local limited, retry = 0, -1
if n + quantity > limit then
  limited = 1
  -- the quantity fits once the (n + quantity - limit) oldest entries have left
  local rank = n + quantity - limit - 1
  local oldest = redis.call('ZRANGE', KEYS[1], rank, rank, 'WITHSCORES')
  retry = math.ceil((oldest[2] + window - now) / 1000)
elseif quantity > 0 then
  local stamp = string.format('%d', now)
  local i = 0
  while i < quantity do
    local entries = {}
    for j = i + 1, math.min(i + 256, quantity) do
      entries[#entries + 1] = stamp
      entries[#entries + 1] = stamp .. '-' .. string.format('%d', n + j)
    end
    redis.call('ZADD', KEYS[1], unpack(entries))
    i = i + 256
  end
  redis.call('PEXPIREAT', KEYS[1], string.format('%d', math.ceil((now + window) / 1000)))
  n = n + quantity
  last = now
end
-- The newest entry is still there whenever any is (trims take the oldest).
local reset = 0
if n > 0 then
  reset = math.ceil((last + window - now) / 1000)
end
return {limited, limit, limit - n, retry, reset}
