#!lua
--- Add one record to a rolling sharded store: write it into the head shard, or rotate to the next ring slot (evicting the oldest shard) when the head is full
-- KEYS[1] meta hash rw: the store's index hash (head, gen, shards, shard_size); its TTL is the index TTL
-- KEYS[2..] slots hash,list rw: hash and order list of consecutive ring slots from first_slot (hash, order, hash, order, ...):
--    normally 2 slots (the head the client expects and the one after it), all slots as a fallback
-- ARGV[1] first_slot integer 0..shards-1: the ring slot of KEYS[2] and KEYS[3]
-- ARGV[2] shards integer 2..999999999999999: the ring size (limit / shard_size rounded up, plus 1)
-- ARGV[3] shard_size integer 1..999999999999999: records per shard
-- ARGV[4] field string nonempty: the record's field (its unique id)
-- ARGV[5] value bytes: the record (JSON in the Rust API)
-- ARGV[6] ttl_ms integer 1..999999999999999: shard TTL in milliseconds, reset on every write to the shard
-- ARGV[7] index_ttl_ms integer ttl_ms..999999999999999: index TTL in milliseconds, reset on every add
-- RETURNS integers: {status, head, gen, evicted}: status 1 = new record, 2 = replaced a record of the head shard,
--    0 = not written because the head is not among the slots passed (retry with first_slot = head);
--    head = the ring slot written (or the current head when status is 0); gen = the shard's generation
--    (0 for the first shard of the store, +1 per rotation); evicted = records dropped with the oldest shard
-- WRITES HSET LREM PEXPIRE RPUSH UNLINK
-- READS HEXISTS HLEN HMGET
-- ERRORS BADARG RINGCONF
-- IDEMPOTENT yes: a second call finds the record in the head shard and writes the same value again (status 2)
local m = redis.call('HMGET', KEYS[1], 'head', 'gen', 'shards', 'shard_size')
local first, shards, size = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local field = ARGV[4]
local nslots = (#KEYS - 1) / 2
if nslots < 1 or nslots ~= math.floor(nslots) or nslots > shards then
  return redis.error_reply('BADARG slots pass the meta key and 1 to shards (hash, order) key pairs')
end

-- Everything is read (and every refusal decided) before the first write:
-- first every hash's length (each read checks the hash's type).
local lens = {}
for i = 2, #KEYS, 2 do
  local len = redis.call('HLEN', KEYS[i])
  lens[i] = len
end
local fresh = not m[1]
local head, gen
if fresh then
  -- A new (or fully expired) store starts at the slot the client expects,
  -- dropping anything a writer with a longer TTL may have left there.
  head = first
  gen = 0
else
  if tonumber(m[3]) ~= shards or tonumber(m[4]) ~= size then
    return redis.error_reply('RINGCONF stored shards=' .. tostring(m[3]) .. ' shard_size=' .. tostring(m[4])
      .. ', called with shards=' .. shards .. ' shard_size=' .. size)
  end
  head = tonumber(m[1])
  gen = tonumber(m[2])
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
local rotate = false
local evicted = 0
-- A fresh store's head shard is the one dropped below: empty.
if not fresh and lens[2 + 2 * d] >= size and redis.call('HEXISTS', hash, field) == 0 then
  -- The head is full: the next slot holds the oldest shard (or nothing).
  local n = pos((head + 1) % shards)
  if not n then
    return {0, head, gen, 0}
  end
  rotate = true
  head = (head + 1) % shards
  gen = gen + 1
  hash, order = KEYS[2 + 2 * n], KEYS[3 + 2 * n]
  evicted = lens[2 + 2 * n]
end

if fresh then
  redis.call('UNLINK', KEYS[2], KEYS[3])
  redis.call('HSET', KEYS[1], 'head', head, 'gen', gen, 'shards', shards, 'shard_size', size)
elseif rotate then
  redis.call('UNLINK', hash, order)
  redis.call('HSET', KEYS[1], 'head', head, 'gen', gen)
end
local status = 1
if redis.call('HSET', hash, field, ARGV[5]) == 0 then
  -- Replaced in place: move the field to the newest end of the order.
  status = 2
  redis.call('LREM', order, '-1', field)
end
redis.call('RPUSH', order, field)
redis.call('PEXPIRE', hash, ARGV[6])
redis.call('PEXPIRE', order, ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return {status, head, gen, evicted}
