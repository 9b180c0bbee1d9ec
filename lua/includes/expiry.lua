--- An expiring map's stored value: a 6-byte big-endian expiry in unix milliseconds (0: none), then the value
-- READS TIME

-- The portable path of the expiring map keeps each entry's expiry with it,
-- in the same listpack field, so a shard stays one small hash on every
-- server. A stored value shorter than 6 bytes was not written by the map:
-- it reads as expired (its expiry -1).

-- The expiry and the value of a stored value (`struct`'s C unpacking: a
-- quarter of the cost of the same bytes read and combined in Lua).
local function expiry_split(stored)
  if #stored < 6 then
    return -1, nil
  end
  return (struct.unpack('>I6', stored)), string.sub(stored, 7)
end

-- The expiry alone of a stored value (-1 for one shorter than 6 bytes),
-- for a caller that does not need the value.
local function expiry_at(stored)
  if #stored < 6 then
    return -1
  end
  return (struct.unpack('>I6', stored))
end

-- The stored form of `value` expiring at `at` (unix ms, 0 for never). An
-- expiry past what 6 bytes hold (2^48 - 1 ms, about the year 10889: a time
-- to live near its bound) is kept as that latest one.
local function expiry_join(at, value)
  if at > 281474976710655 then
    at = 281474976710655
  end
  return struct.pack('>I6', at) .. value
end

-- Whether an entry expiring at `at` is live at `now` (unix ms).
local function expiry_live(at, now)
  return at == 0 or at > now
end

-- The server's clock in unix milliseconds (TIME's strings converted by
-- the arithmetic itself).
local function expiry_now()
  local t = redis.call('TIME')
  local us = t[2]
  return t[1] * 1000 + (us - us % 1000) / 1000
end
