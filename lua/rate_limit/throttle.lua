#!lua
--- GCRA: take quantity units if the subject's theoretical arrival time allows it now; the reply of redis-cell's CL.THROTTLE, times in ms
-- KEYS[1] tat string rw: the subject's theoretical arrival time (TAT) in unix microseconds; it expires at that time, when the subject is fully reset
-- ARGV[1] max_burst integer 0..999999999: units allowed at once beyond the steady rate (the limit is max_burst + 1)
-- ARGV[2] count_per_period integer 1..999999999: units per period (the steady rate); at most period_ms * 1000 (one unit per microsecond)
-- ARGV[3] period_ms integer 1..999999999999: the period in milliseconds; the emission interval is period_ms * 1000 / count_per_period
--    microseconds rounded up, and (max_burst + 1) emission intervals must not exceed 10^15 microseconds
-- ARGV[4] quantity integer 0..max_burst+1: units to take; 0 peeks and writes nothing
-- ARGV[5..] now_us integer 0..4102444800000000: at most one: the time in unix microseconds to use instead of the server's TIME
--    (tests and replays; production leaves it out; the key still expires by the server's clock)
-- RETURNS integers: {limited, limit, remaining, retry_after_ms, reset_after_ms}: limited is 1 when the units were refused, 0 when taken;
--    limit is max_burst + 1; remaining is how many units could be taken right after this call; retry_after_ms is how long until
--    this quantity would be allowed (-1 when allowed); reset_after_ms is how long until the subject is fully reset (both rounded up)
-- WRITES SET
-- READS GET TIME
-- ERRORS BADARG
-- INCLUDE call_time
-- IDEMPOTENT no: a resend would take the units a second time

-- Integer division is exact with math.floor / math.ceil here: every value
-- is an integer from 0 to below 2^53, and a / b then lies at least 1 / b
-- from any integer it is not, farther than a double's rounding error.

-- The checks refused every argument that is no canonical decimal, so
-- arithmetic converts them (cheaper than calls of tonumber).
local burst = ARGV[1] + 0
local count = ARGV[2] + 0
local period = ARGV[3] * 1000
local quantity = ARGV[4] + 0
if count > period then
  return redis.error_reply('BADARG count_per_period must be at most period_ms * 1000 (one unit per microsecond)')
end
local ceil = math.ceil
local interval = ceil(period / count)
local tolerance = interval * (burst + 1)
if tolerance > 1e15 then
  return redis.error_reply('BADARG max_burst (max_burst + 1) emission intervals must not exceed 10^15 microseconds')
end
local now, refused = call_time_us(ARGV, 5)
if refused then
  return refused
end

-- A read of its own statement: it checks the key's type (no TYPE probe).
local stored = redis.call('GET', KEYS[1])
local tat = tonumber(stored)
-- Absent, in the past, or not a TAT this script writes: the subject starts afresh.
if not (tat and tat >= now and tat <= now + 1e15) then
  tat = now
end
local new_tat = tat + interval * quantity
local limited, retry, ahead = 0, -1, new_tat - now
if new_tat - tolerance > now then
  limited, retry, ahead = 1, ceil((new_tat - tolerance - now) / 1000), tat - now
elseif quantity > 0 then
  -- '%d' is the cheapest number to string here (Redis 7.0 formats a Lua
  -- number argument with '%.17g').
  local format = string.format
  redis.call('SET', KEYS[1], format('%d', new_tat), 'PXAT', format('%d', ceil(new_tat / 1000)))
end
local remaining = 0
if tolerance > ahead then
  remaining = math.floor((tolerance - ahead) / interval)
end
return {limited, burst + 1, remaining, retry, ceil(ahead / 1000)}
