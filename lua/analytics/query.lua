#!lua
--- Compute a set expression over event bitmaps with BITOP in one slot and answer its count, a membership or a page of its members
-- KEYS[1] result string rw: where the result is computed: a temporary key deleted before the script returns, or the
--    cache key kept for ttl_ms (and answered from while it lives)
-- KEYS[2..] operands string rw: the registers (temporary keys, deleted before the script returns), then the event
--    bitmaps the program reads (only read; a missing one is an empty bitmap); every key shares KEYS[1]'s hash tag
-- ARGV[1] bitop_diff bool: 1 when the server has BITOP DIFF, DIFF1, ANDOR and ONE (the client's caps): only then may
--    the program use them
-- ARGV[2] registers integer 0..64: how many operands (KEYS[2] on) are registers
-- ARGV[3] answer enum COUNT|MEMBER|MEMBERS: what to return
-- ARGV[4] at integer 0..4294967295: MEMBER: the id asked about; MEMBERS: the first id of the page; COUNT: 0
-- ARGV[5] limit integer 0..100000: MEMBERS: the most ids returned; otherwise 0
-- ARGV[6] ttl_ms integer 0..999999999999: 0: the result is temporary; else KEYS[1] is a cache kept this long
-- ARGV[7..] program string nonempty: the steps in order, each `<OP> <dst> <src> [<src> ...]` with KEYS indices:
--    OP one of AND OR XOR NOT (one src) DIFF DIFF1 ANDOR (two or more srcs) ONE, dst the result (1) or a register
-- RETURNS integers: COUNT: {count}; MEMBER: {1 or 0}; MEMBERS: {next, id, ...}: the ids from at on, ascending, and
--    the id to continue from (-1 when there are no more)
-- WRITES BITOP DEL PEXPIRE
-- READS BITCOUNT BITPOS EXISTS GETBIT INFO STRLEN
-- ERRORS BADARG MAXMEMORY
-- INCLUDE memory
-- IDEMPOTENT yes: the registers (and a temporary result) are deleted before the script returns; a cache key holds
--    the same result again

-- The whole program is read and checked before the first BITOP: an operator
-- this server lacks or a bad index would otherwise fail half-way.
local regs = tonumber(ARGV[2])
if 1 + regs > #KEYS then
  return redis.error_reply('BADARG registers ' .. regs .. ' registers but only ' .. (#KEYS - 1) .. ' operands')
end
local arity = { AND = 1, OR = 1, XOR = 1, NOT = 1, ONE = 1, DIFF = 2, DIFF1 = 2, ANDOR = 2 }
local newer = { DIFF = true, DIFF1 = true, ANDOR = true, ONE = true }
local steps = {}
for s = 7, #ARGV do
  local words = {}
  for w in string.gmatch(ARGV[s], '%S+') do
    words[#words + 1] = w
  end
  local op, at = words[1], 'step ' .. (s - 6) .. ': '
  if not arity[op] then
    return redis.error_reply('BADARG program ' .. at .. 'unknown operator ' .. tostring(op))
  end
  if newer[op] and ARGV[1] ~= '1' then
    return redis.error_reply('BADARG program ' .. at .. op .. ' needs bitop_diff')
  end
  local n = #words - 2
  if n < arity[op] or (op == 'NOT' and n ~= 1) then
    return redis.error_reply('BADARG program ' .. at .. op .. ' with ' .. math.max(n, 0) .. ' sources')
  end
  local idx = {}
  for w = 2, #words do
    local i = string.match(words[w], '^[1-9]%d*$') and tonumber(words[w])
    if not i or i > #KEYS or (w == 2 and i > 1 + regs) then
      return redis.error_reply('BADARG program ' .. at .. 'bad key index ' .. words[w])
    end
    idx[#idx + 1] = KEYS[i]
  end
  steps[#steps + 1] = { op, idx }
end
local ttl = ARGV[6]
local cached = ttl ~= '0' and redis.call('EXISTS', KEYS[1]) == 1
if not cached then
  -- No register grows beyond the longest input.
  local longest = 0
  for i = 2 + regs, #KEYS do
    longest = math.max(longest, redis.call('STRLEN', KEYS[i]))
  end
  local refused = memory_refusal(longest * (1 + regs), (1 + regs) .. ' temporary keys')
  if refused then
    return refused
  end
  for _, st in ipairs(steps) do
    redis.call('BITOP', st[1], unpack(st[2]))
  end
end
local out
if ARGV[3] == 'COUNT' then
  out = { redis.call('BITCOUNT', KEYS[1]) }
elseif ARGV[3] == 'MEMBER' then
  out = { redis.call('GETBIT', KEYS[1], ARGV[4]) }
else
  local pos, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
  local bits = redis.call('STRLEN', KEYS[1]) * 8
  out = { -1 }
  while #out <= limit and pos < bits do
    local p = redis.call('BITPOS', KEYS[1], 1, pos, -1, 'BIT')
    if p < 0 then
      pos = bits
    else
      out[#out + 1] = p
      pos = p + 1
    end
  end
  if pos < bits then
    out[1] = pos
  end
end
for i = 2, 1 + regs do
  redis.call('DEL', KEYS[i])
end
if ttl == '0' then
  redis.call('DEL', KEYS[1])
elseif not cached then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return out
