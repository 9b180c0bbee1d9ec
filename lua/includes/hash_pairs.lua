--- A hash write's field/value pairs, checked, and the stored values of their fields
-- READS HMGET
-- ERRORS BADARG

-- The pairs are `argv` from `from` on: field, value, field, value, ...
-- (the header cannot say that they come in pairs). Returns the refusal of
-- pairs that are none or not in pairs, reading nothing; or nil and the
-- stored value of each of their fields that the hash `key` holds (nil for
-- one it does not hold), read by HMGET in chunks (unpack is capped).
local function pairs_stored(key, argv, from)
  local n = #argv - from + 1
  if n == 0 or n % 2 ~= 0 then
    return redis.error_reply('BADARG pairs must be a non-empty list of field, value')
  end
  local fields, stored = {}, {}
  for i = from, #argv, 2 do
    fields[#fields + 1] = argv[i]
  end
  local chunk = 4000
  for s = 1, #fields, chunk do
    local got = redis.call('HMGET', key, unpack(fields, s, math.min(s + chunk - 1, #fields)))
    for j = 1, #got do
      if got[j] then
        stored[fields[s + j - 1]] = got[j]
      end
    end
  end
  return nil, stored
end
