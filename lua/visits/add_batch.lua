#!lua
--- Count many visits of one day in one call: add members to their shard sets, count only new ones
-- KEYS[1] counter string rw: the day's count of distinct members (same hash tag as every shard of the day)
-- KEYS[2] meta hash rw: the day's layout (pattern, version, shards), written with the day's first members
-- KEYS[3..] shards set rw: the distinct shard sets this batch touches, in the order of the groups in ARGV
-- ARGV[1] expire_at integer 0..999999999999999: unix seconds at which the day's keys expire (end of day plus grace); 0 for no expiry
-- ARGV[2] accept_until integer 0..999999999999999: unix seconds from which visits to the day are refused (end of day plus
--    the late window); 0 to accept them as long as the keys live
-- ARGV[3] shard_count integer 1..1048576: the caller's shard count; refused (LAYOUT) when the day stores another
-- ARGV[4..] groups int64: for each shard key in order, the number n of its members, then those n members
--    (distinct canonical decimal int64 values)
-- RETURNS integers: {count, new_1, ..., new_m}: the day's distinct count after the batch, then 1 or 0 per
--    member in ARGV order (1 when it had not been counted that day)
-- WRITES EXPIREAT HSET INCRBY SADD
-- READS GET HGET SMISMEMBER TIME
-- ERRORS BADARG DAYENDED LAYOUT
-- INCLUDE day_layout
-- INCLUDE day_open
-- IDEMPOTENT yes: the members are in their shards already, so the counter is not incremented again
--    (the second reply says none is new)

-- The generated checks saw every entry of groups is an int64; the layout
-- (a count, then that many members, per shard key) is checked here, and
-- the number of new members is known before the first write, so that the
-- counter (INCRBY: the one write that can fail on what its key holds) is
-- written first. Every shard is read (SMISMEMBER, which checks it is a
-- set) before any other refusal can answer.
local stored = redis.call('GET', KEYS[1])
local groups = {}
local i = 4
for k = 3, #KEYS do
  local n = tonumber(ARGV[i])
  if not n or n < 1 then
    return redis.error_reply('BADARG groups group ' .. (k - 2) .. ' needs a positive member count')
  end
  if i + n > #ARGV then
    return redis.error_reply('BADARG groups group ' .. (k - 2) .. ' announces ' .. n .. ' members but fewer follow')
  end
  groups[#groups + 1] = {k, i + 1, i + n}
  i = i + n + 1
end
if i ~= #ARGV + 1 then
  return redis.error_reply('BADARG groups more arguments than the groups announce')
end
local out = {0}
local added = {}
local total = 0
local CHUNK = 4000
-- The replies of one shard's SMISMEMBER for ARGV[a..]: each member's
-- answer appended to out, and how many of them are new (once each).
local function tally(member, a, seen)
  local new = 0
  for j, s in ipairs(member) do
    out[#out + 1] = 1 - s
    local m = ARGV[a + j - 1]
    if s == 0 and not seen[m] then
      seen[m] = true
      new = new + 1
    end
  end
  return new
end
for k = 3, #KEYS do
  local from, to = groups[k - 2][2], groups[k - 2][3]
  local member = redis.call('SMISMEMBER', KEYS[k], unpack(ARGV, from, math.min(from + CHUNK - 1, to)))
  local seen = {}
  local new = tally(member, from, seen)
  for a = from + CHUNK, to, CHUNK do
    local more = redis.call('SMISMEMBER', KEYS[k], unpack(ARGV, a, math.min(a + CHUNK - 1, to)))
    new = new + tally(more, a, seen)
  end
  added[k - 2] = new
  total = total + new
end
local refused, layout = layout_refusal(KEYS[2], ARGV[3])
if refused then
  return refused
end
refused = day_refusal(ARGV[1], ARGV[2])
if refused then
  return refused
end
if total == 0 then
  out[1] = tonumber(stored or '0')
  return out
end
local count = redis.call('INCRBY', KEYS[1], total)
out[1] = count
for g, group in ipairs(groups) do
  if added[g] > 0 then
    local key, from, to = KEYS[group[1]], group[2], group[3]
    for a = from, to, CHUNK do
      redis.call('SADD', key, unpack(ARGV, a, math.min(a + CHUNK - 1, to)))
    end
    if ARGV[1] ~= '0' then
      redis.call('EXPIREAT', key, ARGV[1])
    end
  end
end
day_written(KEYS[1], KEYS[2], layout, ARGV[3], ARGV[1])
return out
