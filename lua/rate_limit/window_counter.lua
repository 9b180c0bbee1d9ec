#!lua
--- Sliding window counter: take quantity units if the previous fixed window's count, weighted by its share of the sliding window, plus the current one's allows it; CL.THROTTLE's reply
-- KEYS[1] counter hash rw: field w is the current fixed window's number (unix ms / window_ms), c its count, p the previous window's count;
--    it expires when both windows have passed
-- ARGV[1] limit integer 1..1000000: units allowed per window
-- ARGV[2] window_ms integer 1..2592000000: the window in milliseconds (at most 30 days)
-- ARGV[3] quantity integer 0..limit: units to take; 0 peeks and writes nothing
-- ARGV[4..] now_us integer 0..4102444800000000: at most one: the time in unix microseconds to use instead of the server's TIME
--    (tests and replays; production leaves it out; the key still expires by the server's clock)
-- RETURNS integers: {limited, limit, remaining, retry_after_ms, reset_after_ms}: limited is 1 when the units were refused, 0 when taken;
--    remaining is how many units could be taken right after this call; retry_after_ms is how long until this quantity would be
--    allowed (-1 when allowed); reset_after_ms is how long until both windows have passed (0 when nothing is counted)
-- WRITES HSET PEXPIREAT
-- READS HMGET TIME
-- ERRORS BADARG
-- INCLUDE call_time
-- IDEMPOTENT no: a resend would take the units a second time

-- Integer division is exact with math.floor here: every value
-- is an integer from 0 to below 2^53, and a / b then lies at least 1 / b
-- from any integer it is not, farther than a double's rounding error.
-- A stored count, or 0 for anything this script does not write.
local function stored_count(v)
  local n = tonumber(v)
  if n and n >= 0 and n <= 1000000 and n == math.floor(n) then return n end
  return 0
end

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local quantity = tonumber(ARGV[3])
local now_us, refused = call_time_us(ARGV, 4)
if refused then
  return refused
end
local now = math.floor(now_us / 1000) -- in milliseconds: the weights' resolution

local stored = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local number = math.floor(now / window)
local elapsed = now - number * window
local cur, prev = 0, 0
local w = tonumber(stored[1])
if w == number then
  cur, prev = stored_count(stored[2]), stored_count(stored[3])
elseif w == number - 1 then
  prev = stored_count(stored[2])
end
-- The weighted count times window_ms, exact: prev * (window - elapsed) / window + cur.
local used = prev * (window - elapsed) + cur * window
local limited, retry = 0, -1
if used + quantity * window > limit * window then
  limited = 1
  local at -- ms after the current window's start at which the quantity fits
  if cur + quantity <= limit then
    -- later in this window, once enough of the previous window has slid out
    at = window - math.floor((limit - cur - quantity) * window / prev)
  else
    -- in the next window, once enough of this one has slid out
    at = 2 * window - math.floor((limit - quantity) * window / cur)
  end
  retry = at - elapsed
elseif quantity > 0 then
  cur = cur + quantity
  used = used + quantity * window
  redis.call('HSET', KEYS[1], 'w', string.format('%d', number), 'c', string.format('%d', cur), 'p', string.format('%d', prev))
  redis.call('PEXPIREAT', KEYS[1], string.format('%d', (number + 2) * window))
end
local remaining = 0
if used < limit * window then
  remaining = math.floor((limit * window - used) / window)
end
local reset = 0
if cur > 0 then
  reset = (number + 2) * window - now
elseif prev > 0 then
  reset = (number + 1) * window - now
end
return {limited, limit, remaining, retry, reset}
