#!lua
--- Give a permit back, only if the caller holds it, and wake the waiters
-- KEYS[1] permits zset rw: the holders: owner token -> the end of its lease (unix ms)
-- ARGV[1] token string nonempty: the holder's token
-- ARGV[2] channel string tagged: the semaphore's wake-up channel, a shard channel with the key's hash tag (`<key>:wake` in the Rust API)
-- RETURNS integer: 1 when released (a message on the channel wakes the waiters), 0 when the token held no permit (or its lease had ended)
-- WRITES ZREM
-- READS SPUBLISH TIME ZSCORE
-- INCLUDE lease_release
-- IDEMPOTENT yes: a second call finds no permit of the token and removes nothing (it answers 0)
if not release_lease(KEYS[1], ARGV[1]) then
  return 0
end
redis.call('SPUBLISH', ARGV[2], 'released')
return 1
