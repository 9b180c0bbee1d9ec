#!lua flags=no-writes
--- List the days of one month, within a day range, on which a user logged in
-- KEYS[1] log: the user's monthly log, the seed's `<prefix>_<YYYY-MM>_<type>_<uid>` (bit n = day n of the month)
-- ARGV[1] first_day integer: the first day of the month in the range, 1 to 31
-- ARGV[2] last_day integer: the last day of the month in the range, first_day to 31
-- RETURNS integers: the days from first_day to last_day whose bit is set, ascending (never a day outside)
-- ERRORS BADARG
local first, last = tonumber(string.match(ARGV[1], '^%d%d?$')), tonumber(string.match(ARGV[2], '^%d%d?$'))
if not first or not last or first < 1 or last > 31 or first > last then
  return redis.error_reply('BADARG days must satisfy 1 <= first_day <= last_day <= 31')
end
-- BITCOUNT with a BIT range (Redis >= 7) counts only the days inside the range.
if redis.call('BITCOUNT', KEYS[1], first, last, 'BIT') == 0 then
  return {}
end
-- Bits 0..31 of the log as one unsigned integer; bit n is 2^(31-n).
local word = redis.call('BITFIELD_RO', KEYS[1], 'GET', 'u32', 0)[1]
local days = {}
for d = first, last do
  if math.floor(word / 2 ^ (31 - d)) % 2 == 1 then
    days[#days + 1] = d
  end
end
return days
