--- Combine day bitmaps into a temporary key with BITOP (OR: on any day, AND: on every day)
-- WRITES BITOP
-- ERRORS BADARG

-- `keys` is the script's KEYS: the temporary key, then the day bitmaps (a
-- missing day is an empty bitmap). Returns the refusal of a call without
-- a day, or nil and BITOP's reply (the result's length in bytes; 0: BITOP
-- left no key). BITOP checks every day's type before it writes, and reads
-- the days nowhere else: the generated checks leave them to it.
local function bitop_days(op, keys)
  if #keys < 2 then
    return redis.error_reply('BADARG days at least one day bitmap is needed')
  end
  local bytes = redis.call('BITOP', op, keys[1], unpack(keys, 2))
  return nil, bytes
end
