--- A rolling store's head slot from its index hash, the ring size checked against the call's
-- READS HMGET
-- ERRORS RINGCONF

-- `shards` is the ring size the call's keys make. Returns the refusal
-- (RINGCONF) when the store was made with another one, or nil and the head
-- slot (nil for a store that is empty or expired).
local function ring_head(meta, shards)
  local m = redis.call('HMGET', meta, 'head', 'shards')
  if not m[1] then
    return nil, nil
  end
  if tonumber(m[2]) ~= shards then
    return redis.error_reply('RINGCONF stored shards=' .. tostring(m[2]) .. ', called with shards=' .. shards)
  end
  return nil, tonumber(m[1])
end
