--- Combine day bitmaps into a temporary key with BITOP (OR: on any day, AND: on every day)
-- WRITES BITOP
-- ERRORS BADARG

-- `keys` is the script's KEYS: the temporary key, then the day bitmaps
-- (a missing day is an empty bitmap). Returns the refusal of a call
-- without a day, or nil and BITOP's reply (the result's length in bytes).
local function bitop_days(op, keys)
  if #keys < 2 then
    return redis.error_reply('BADARG days at least one day bitmap is needed')
  end
  local days = {}
  for i = 2, #keys do
    days[#days + 1] = keys[i]
  end
  return nil, redis.call('BITOP', op, keys[1], unpack(days))
end
