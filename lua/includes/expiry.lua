--- An expiring map's stored value: a 6-byte big-endian expiry in unix milliseconds (0: none), then the value
-- READS TIME

-- The portable path of the expiring map keeps each entry's expiry with it,
-- in the same listpack field, so a shard stays one small hash on every
-- server. A stored value shorter than 6 bytes was not written by the map:
-- it reads as expired (its expiry -1).
local function expiry_split(stored)
  local b1, b2, b3, b4, b5, b6 = string.byte(stored, 1, 6)
  if not b6 then
    return -1, nil
  end
  return ((((b1 * 256 + b2) * 256 + b3) * 256 + b4) * 256 + b5) * 256 + b6, string.sub(stored, 7)
end

-- The stored form of `value` expiring at `at` (unix ms, 0 for never).
local function expiry_join(at, value)
  local bytes = {}
  for i = 6, 1, -1 do
    bytes[i] = at % 256
    at = math.floor(at / 256)
  end
  return string.char(bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6]) .. value
end

-- Whether an entry expiring at `at` is live at `now` (unix ms).
local function expiry_live(at, now)
  return at == 0 or at > now
end

-- The server's clock in unix milliseconds.
local function expiry_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
