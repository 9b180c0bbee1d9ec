#!lua
--- Take the write lease when no one holds the lock, or renew the caller's own; otherwise record the caller's intent to write
-- KEYS[1] writer string rw: the writer's token, its TTL the writer's lease
-- KEYS[2] readers zset rw: reader token -> the end of its lease (unix ms, server clock)
-- KEYS[3] intents zset rw: waiting writer token -> the end of its intent (unix ms); while a writer waits, new readers wait too
-- ARGV[1] token string nonempty: the writer's token (unguessable; the Rust API uses 32 hex digits)
-- ARGV[2] lease_ms integer 1..999999999999999: the write lease in milliseconds
-- ARGV[3] intent_ms integer 1..999999999999999: how long a refused caller's intent keeps new readers out unless its next attempt renews it
-- RETURNS integer: 1 when acquired, or renewed when the token already held the write lease (a retry);
--    <= 0 when the lock is held: minus the ms until the writer's lease or the first reader's lease ends (0: unknown)
-- WRITES PEXPIREAT SET ZADD ZREM ZREMRANGEBYSCORE
-- READS GET PTTL TIME ZRANGE
-- INCLUDE clock
-- INCLUDE lease
-- IDEMPOTENT yes: a resend with the same token finds its write lease (or its intent) and renews it
local now = now_ms()
local after = '(' .. string.format('%.0f', now)
local owner = redis.call('GET', KEYS[1])
-- Readers whose lease ended are gone (a reader that crashed).
local reader = redis.call('ZRANGE', KEYS[2], after, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
local wait = 0
if owner and owner ~= ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  wait = pttl > 0 and -pttl or 0
elseif not owner and reader[2] then
  wait = now - tonumber(reader[2])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  return 1
end
-- The caller's intent, renewed (intents that ended are gone).
take_lease(KEYS[3], ARGV[1], now, ARGV[3])
return wait
