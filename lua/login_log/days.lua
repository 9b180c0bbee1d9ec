#!lua flags=no-writes
--- List the days of one month, within a day range, on which a user logged in
-- KEYS[1] log string ro: the user's monthly log, the PHP login-log recipe's `<prefix><YYYY-MM>_<type>_<uid>` (bit n = day n of the month)
-- ARGV[1] first_day integer 1..31: the first day of the month in the range
-- ARGV[2] last_day integer first_day..31: the last day of the month in the range
-- RETURNS integers: the days from first_day to last_day whose bit is set, ascending (never a day outside)
-- READS BITCOUNT BITFIELD_RO
local first, last = tonumber(ARGV[1]), tonumber(ARGV[2])
-- BITCOUNT with a BIT range (Redis >= 7) counts only the days inside the range.
if redis.call('BITCOUNT', KEYS[1], first, last, 'BIT') == 0 then
  return {}
end
-- Bits 0..31 of the log as one unsigned integer; bit n is 2^(31-n).
local word = redis.call('BITFIELD_RO', KEYS[1], 'GET', 'u32', '0')[1]
local days = {}
for d = first, last do
  if math.floor(word / 2 ^ (31 - d)) % 2 == 1 then
    days[#days + 1] = d
  end
end
return days
