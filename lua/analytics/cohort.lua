#!lua
--- Count a cohort table in one call: each row's cohort size and how many of it are in each later period's return bitmap
-- KEYS[1] tmp string rw: a temporary key (same hash tag as the bitmaps), deleted before the script returns
-- KEYS[2..] bitmaps string ro: the rows' cohort bitmaps (row i: period i), then the return bitmaps of periods 0, 1, ...
--    (a missing period is an empty bitmap)
-- ARGV[1] rows integer 1..1000: how many cohort bitmaps come first
-- ARGV[2] columns integer 1..1000: the columns of a row: the return periods i, i+1, ..., i+columns-1 of row i
-- RETURNS integers: per return bitmap 1 when it has a bit set, else 0, then per row its cohort's size and one count
--    per column whose period is among the return bitmaps (the last rows have fewer)
-- WRITES BITOP COPY DEL SETRANGE
-- READS BITCOUNT BITPOS GETRANGE INFO STRLEN
-- ERRORS BADARG MAXMEMORY
-- INCLUDE memory
-- IDEMPOTENT yes: the temporary key is deleted before the script returns; the bitmaps are only read

local rows, columns = tonumber(ARGV[1]), tonumber(ARGV[2])
local returns = #KEYS - 1 - rows
if returns < 1 then
  return redis.error_reply('BADARG bitmaps expected ' .. rows .. ' cohort bitmaps and at least one return bitmap')
end
-- Each bitmap's length and the bytes that can hold a set bit: from its first set bit's byte to its last byte
-- (first = -1: none).
local len, first, last = {}, {}, {}
local longest = 0
for i = 2, #KEYS do
  len[i] = redis.call('STRLEN', KEYS[i])
  longest = math.max(longest, len[i])
  first[i], last[i] = -1, len[i] - 1
  if len[i] > 0 then
    local pos = redis.call('BITPOS', KEYS[i], 1)
    if pos >= 0 then
      first[i] = math.floor(pos / 8)
    end
  end
end
-- BITOP AND writes at most the longest input's length.
local refused = memory_refusal(longest, 'the temporary key')
if refused then
  return refused
end
local tmp = KEYS[1]
-- tmp holds a row's window copy: as long as its cohort bitmap, zero but for copied return bytes.
local window_of = nil
-- One cell: the AND of cohort bitmap c and return bitmap r counted over the bytes from..to, where both spans overlap.
-- BITOP takes every byte up to the longer input's end, those past the shorter one's end one at a time: the cheapest
-- of three ways is taken, by their costs in nanoseconds measured on Redis 7.0 (random bytes; 8.2 is faster at each):
-- direct, BITOP over both (0.15 a byte up to the shorter's end, 3.5 past it); padded, the shorter copied into tmp
-- (COPY), zero-padded to the longer's length (SETRANGE) and ANDed with it (5000 + 0.15 a byte of the longer); windowed,
-- the return bitmap's bytes from..to copied into tmp at the same offsets, tmp as long as c and ANDed with c (GETRANGE
-- and SETRANGE through the script: 3000 + 1.5 a byte copied, + 0.15 a byte of c).
local function cell(c, r, from, to)
  local short, long = c, r
  if len[c] > len[r] then
    short, long = r, c
  end
  local direct = 0.15 * len[short] + 3.5 * (len[long] - len[short])
  local padded = 5000 + 0.15 * len[long]
  local windowed = 3000 + 1.5 * (to - from + 1) + 0.15 * len[c]
  if direct <= padded and direct <= windowed then
    redis.call('BITOP', 'AND', tmp, KEYS[c], KEYS[r])
    window_of = nil
  elseif padded <= windowed then
    redis.call('COPY', KEYS[short], tmp, 'REPLACE')
    redis.call('SETRANGE', tmp, len[long] - 1, '\0')
    redis.call('BITOP', 'AND', tmp, tmp, KEYS[long])
    window_of = nil
  else
    if window_of ~= c then
      redis.call('DEL', tmp)
      redis.call('SETRANGE', tmp, len[c] - 1, '\0')
      window_of = c
    end
    redis.call('SETRANGE', tmp, from, redis.call('GETRANGE', KEYS[r], from, to))
    redis.call('BITOP', 'AND', tmp, tmp, KEYS[c])
  end
  return redis.call('BITCOUNT', tmp, from, to)
end
local out = {}
for j = 1, returns do
  out[j] = first[1 + rows + j] >= 0 and 1 or 0
end
for i = 1, rows do
  local c = 1 + i
  local size = 0
  if first[c] >= 0 then
    size = redis.call('BITCOUNT', KEYS[c], first[c], last[c])
  end
  out[#out + 1] = size
  for k = 0, columns - 1 do
    local r = 1 + rows + i + k
    if r > #KEYS then
      break
    end
    local from, to = math.max(first[c], first[r]), math.min(last[c], last[r])
    if size == 0 or first[r] < 0 or from > to then
      out[#out + 1] = 0
    else
      out[#out + 1] = cell(c, r, from, to)
    end
  end
end
redis.call('DEL', tmp)
return out
