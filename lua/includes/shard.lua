--- Room for a packed shard of target bytes (within proto-max-bulk-len and maxmemory), then its growth to the reserve
-- INCLUDE bulk_len
-- INCLUDE memory
-- WRITES SET
-- READS GET GETBIT INFO STRLEN
-- ERRORS BADARG MAXMEMORY

-- The packed scripts' last step before they write: the shard after the
-- call is `target` bytes long, the larger of its reserve and `farthest`
-- (the end of the farthest byte the call writes), which must be within
-- the server's string limit (else a later SETRANGE would fail after the
-- first write) and fit under maxmemory. Then a shard
-- shorter than its reserve grows to exactly the reserve, zero-filled, in
-- one SET (KEEPTTL), so that later SETRANGEs never over-allocate. Returns
-- the refusal (naming the argument `name`), or nil once grown: the caller
-- writes nothing before it, and nothing that can fail after it.
local function shard_room(key, reserve, farthest, name)
  local target = math.max(reserve, farthest)
  local len = redis.call('STRLEN', key)
  local refused = target > 0 and bulk_len_refusal(key, target * 8 - 1, name, 'shard length ' .. target)
    or memory_refusal(target - len, key)
  if refused then
    return refused
  end
  if reserve > 0 and len < reserve then
    local old = ''
    if len > 0 then
      old = redis.call('GET', key)
    end
    redis.call('SET', key, old .. string.rep('\0', reserve - len), 'KEEPTTL')
  end
  return nil
end
