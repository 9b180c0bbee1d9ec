#!lua flags=no-writes
--- Tell whether a token owns the lock and how long its lease has left
-- KEYS[1] lock string ro: the lock
-- ARGV[1] token string nonempty: the token to check
-- RETURNS integer: the remaining lease in ms (> 0) when the token owns the lock,
--    -1 when it owns it without a TTL, 0 when it does not own it
-- READS GET PTTL
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 0 then
    return pttl
  end
  return -1
end
return 0
