--- A visits day's layout in its meta hash (pattern, version, shards): checked against the call's shard count, written with the day's first members
-- WRITES EXPIREAT HSET
-- READS HGET
-- ERRORS LAYOUT

-- `shard_count` and `expire_at` are the scripts' arguments. Returns the
-- refusal (LAYOUT) when the day stores another shard count, or nil and the
-- stored count (nil for a day without members yet).
local function layout_refusal(meta, shard_count)
  local stored = redis.call('HGET', meta, 'shards')
  if stored and stored ~= shard_count then
    return redis.error_reply('LAYOUT ' .. meta .. ' holds shards=' .. stored .. ', this call uses shards=' .. shard_count)
  end
  return nil, stored
end

-- After a call added members: the day's first ones write its layout, and
-- the counter and the meta hash expire at expire_at ('0' for no expiry).
local function day_written(counter, meta, stored, shard_count, expire_at)
  if not stored then
    redis.call('HSET', meta, 'pattern', 'visits', 'version', '1', 'shards', shard_count)
  end
  if expire_at ~= '0' then
    redis.call('EXPIREAT', counter, expire_at)
    redis.call('EXPIREAT', meta, expire_at)
  end
end
