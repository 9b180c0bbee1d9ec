#!lua
--- Add one record to a rolling sharded store: write it into the head shard, or rotate to the next ring slot (evicting the oldest shard) when the head is full
-- KEYS[1] meta: the store's index hash (head, gen, shards, shard_size); its TTL is the index TTL
-- KEYS[2..] slots: hash and order list of consecutive ring slots from first_slot (hash, order, hash, order, ...):
--    normally 2 slots (the head the client expects and the one after it), all slots as a fallback
-- ARGV[1] first_slot integer: the ring slot of KEYS[2] and KEYS[3], 0 to shards - 1
-- ARGV[2] shards integer: the ring size (limit / shard_size rounded up, plus 1), at least 2
-- ARGV[3] shard_size integer: records per shard, at least 1
-- ARGV[4] field string: the record's field (its unique id), not empty
-- ARGV[5] value bytes: the record (JSON in the Rust API)
-- ARGV[6] ttl_ms integer: shard TTL in milliseconds, reset on every write to the shard
-- ARGV[7] index_ttl_ms integer: index TTL in milliseconds (>= ttl_ms), reset on every add
-- RETURNS integers: {status, head, gen, evicted}: status 1 = new record, 2 = replaced a record of the head shard,
--    0 = not written because the head is not among the slots passed (retry with first_slot = head);
--    head = the ring slot written (or the current head when status is 0); gen = the shard's generation
--    (0 for the first shard of the store, +1 per rotation); evicted = records dropped with the oldest shard
-- ERRORS BADARG RINGCONF
local function int(s, lo, hi)
  if not string.match(s, '^%d+$') or #s > 15 then
    return nil
  end
  local n = tonumber(s)
  if n < lo or (hi and n > hi) then
    return nil
  end
  return n
end
local shards = int(ARGV[2], 2)
if not shards then
  return redis.error_reply('BADARG shards must be an integer >= 2')
end
local first = int(ARGV[1], 0, shards - 1)
if not first then
  return redis.error_reply('BADARG first_slot must be an integer from 0 to shards - 1')
end
local size = int(ARGV[3], 1)
if not size then
  return redis.error_reply('BADARG shard_size must be an integer >= 1')
end
if ARGV[4] == '' then
  return redis.error_reply('BADARG field must not be empty')
end
local ttl = int(ARGV[6], 1)
if not ttl then
  return redis.error_reply('BADARG ttl_ms must be an integer >= 1')
end
local index_ttl = int(ARGV[7], ttl)
if not index_ttl then
  return redis.error_reply('BADARG index_ttl_ms must be an integer >= ttl_ms')
end
local nslots = (#KEYS - 1) / 2
if nslots < 1 or nslots ~= math.floor(nslots) or nslots > shards then
  return redis.error_reply('BADARG pass the meta key and 1 to shards (hash, order) key pairs')
end

local meta = KEYS[1]
local m = redis.call('HMGET', meta, 'head', 'gen', 'shards', 'shard_size')
local head, gen
if m[1] then
  if tonumber(m[3]) ~= shards or tonumber(m[4]) ~= size then
    return redis.error_reply('RINGCONF stored shards=' .. tostring(m[3]) .. ' shard_size=' .. tostring(m[4])
      .. ', called with shards=' .. shards .. ' shard_size=' .. size)
  end
  head = tonumber(m[1])
  gen = tonumber(m[2])
else
  -- A new (or fully expired) store starts at the slot the client expects,
  -- dropping anything a writer with a longer TTL may have left there.
  head = first
  gen = 0
  redis.call('UNLINK', KEYS[2], KEYS[3])
  redis.call('HSET', meta, 'head', head, 'gen', gen, 'shards', shards, 'shard_size', size)
end

-- The position of a ring slot among the slots passed, or nil.
local function pos(slot)
  local d = (slot - first) % shards
  if d < nslots then
    return d
  end
  return nil
end

local d = pos(head)
if not d then
  return {0, head, gen, 0}
end
local hash, order = KEYS[2 + 2 * d], KEYS[3 + 2 * d]
local field = ARGV[4]
local status = 1
local evicted = 0
if redis.call('HLEN', hash) >= size and redis.call('HEXISTS', hash, field) == 0 then
  -- The head is full: the next slot holds the oldest shard (or nothing).
  local n = pos((head + 1) % shards)
  if not n then
    return {0, head, gen, 0}
  end
  head = (head + 1) % shards
  gen = gen + 1
  hash, order = KEYS[2 + 2 * n], KEYS[3 + 2 * n]
  evicted = redis.call('HLEN', hash)
  redis.call('UNLINK', hash, order)
  redis.call('HSET', meta, 'head', head, 'gen', gen)
end
if redis.call('HSET', hash, field, ARGV[5]) == 0 then
  -- Replaced in place: move the field to the newest end of the order.
  status = 2
  redis.call('LREM', order, -1, field)
end
redis.call('RPUSH', order, field)
redis.call('PEXPIRE', hash, ttl)
redis.call('PEXPIRE', order, ttl)
redis.call('PEXPIRE', meta, index_ttl)
return {status, head, gen, evicted}
