#!lua
--- Take a read lease when no writer holds the lock or waits for it, or renew the caller's own
-- KEYS[1] writer string ro: the writer's token, its TTL the writer's lease
-- KEYS[2] readers zset rw: reader token -> the end of its lease (unix ms, server clock)
-- KEYS[3] intents zset rw: waiting writer token -> the end of its intent (unix ms); while a writer waits, new readers wait too
-- ARGV[1] token string nonempty: the reader's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the read lease in milliseconds
-- RETURNS integer: 1 when acquired, or renewed when the token already held a read lease (a retry);
--    <= 0 when a writer holds the lock or waits for it: minus the ms until that writer's lease or intent ends (0: unknown)
-- WRITES PEXPIREAT ZADD ZREMRANGEBYSCORE
-- READS GET PTTL TIME ZRANGE ZSCORE
-- INCLUDE clock
-- INCLUDE lease
-- IDEMPOTENT yes: a resend with the same token finds its read lease and renews it (answers 1)
local now = now_ms()
local after = '(' .. string.format('%.0f', now)
local mine = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not (mine and tonumber(mine) > now) then
  if redis.call('GET', KEYS[1]) then
    local pttl = redis.call('PTTL', KEYS[1])
    return pttl > 0 and -pttl or 0
  end
  -- A waiting writer goes first: no writer starves behind new readers.
  -- (Intents that ended are those of writers that crashed.)
  local first = redis.call('ZRANGE', KEYS[3], after, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  if first[2] then
    return now - tonumber(first[2])
  end
end
take_lease(KEYS[2], ARGV[1], now, ARGV[2])
-- Intents that ended are gone too (writers that crashed).
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
return 1
