#!lua
--- Count a cohort table in one call: each row's cohort size and how many of it are in each later period's return bitmap
-- KEYS[1] tmp string rw: a temporary key (same hash tag as the bitmaps), deleted before the script returns
-- KEYS[2..] bitmaps string ro: the rows' cohort bitmaps (row i: period i), then the return bitmaps of periods 0, 1, ...
--    (a missing period is an empty bitmap)
-- ARGV[1] rows integer 1..1000: how many cohort bitmaps come first
-- ARGV[2] columns integer 1..1000: the columns of a row: the return periods i, i+1, ..., i+columns-1 of row i
-- RETURNS integers: the BITCOUNT of every return bitmap, then per row its cohort's size and one count per column whose
--    period is among the return bitmaps (the last rows have fewer)
-- WRITES BITOP DEL
-- READS BITCOUNT INFO STRLEN
-- ERRORS BADARG MAXMEMORY
-- INCLUDE memory
-- IDEMPOTENT yes: the temporary key is deleted before the script returns; the bitmaps are only read

local rows, columns = tonumber(ARGV[1]), tonumber(ARGV[2])
local returns = #KEYS - 1 - rows
if returns < 1 then
  return redis.error_reply('BADARG bitmaps expected ' .. rows .. ' cohort bitmaps and at least one return bitmap')
end
-- BITOP AND writes at most the longest input's length.
local longest = 0
for i = 2, #KEYS do
  longest = math.max(longest, redis.call('STRLEN', KEYS[i]))
end
local refused = memory_refusal(longest, 'the temporary key')
if refused then
  return refused
end
local out = {}
local back = {}
for j = 1, returns do
  back[j] = redis.call('BITCOUNT', KEYS[1 + rows + j])
  out[#out + 1] = back[j]
end
for i = 1, rows do
  local cohort = KEYS[1 + i]
  local size = redis.call('BITCOUNT', cohort)
  out[#out + 1] = size
  for k = 0, columns - 1 do
    local j = i + k
    if j > returns then
      break
    end
    if size == 0 or back[j] == 0 then
      out[#out + 1] = 0
    else
      redis.call('BITOP', 'AND', KEYS[1], cohort, KEYS[1 + rows + j])
      out[#out + 1] = redis.call('BITCOUNT', KEYS[1])
    end
  end
end
redis.call('DEL', KEYS[1])
return out
