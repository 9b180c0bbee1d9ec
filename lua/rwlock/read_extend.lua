#!lua
--- Give a reader a fresh lease, only if its read lease has not ended
-- KEYS[1] readers zset rw: reader token -> the end of its lease (unix ms, server clock)
-- ARGV[1] token string nonempty: the reader's token
-- ARGV[2] lease_ms integer 1..999999999999999: the new lease in milliseconds from now
-- RETURNS integer: 1 when extended, 0 when the token holds no live read lease
-- WRITES PEXPIREAT ZADD
-- READS TIME ZRANGE ZSCORE
-- INCLUDE lease_extend
-- IDEMPOTENT yes: a resend sets the same lease again
return extend_lease(KEYS[1], ARGV[1], ARGV[2])
