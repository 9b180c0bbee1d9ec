#!lua
--- Set a user's bit in the day's index of its type and note the type (the cluster half of login_log.record)
-- KEYS[1] day_index string rw: the day's bitmap of user ids of this type (bit uid)
-- KEYS[2] types set rw: the month's set of user types seen (same hash tag as day_index)
-- ARGV[1] uid integer 0..999999999999999: the user id, 0 to max_uid (the bit offset in day_index)
-- ARGV[2] max_uid integer 0..4294967295: the configured maximum user id (the offset trap guard)
-- ARGV[3] user_type string nonempty: the user type
-- ARGV[4] expire_at integer 0..999999999999999: unix seconds at which the day index and types expire, 0 to keep them
-- RETURNS integer: 1 when the user's bit was not yet set in that day's index, 0 otherwise
-- WRITES EXPIREAT SADD SETBIT
-- READS EXPIRETIME INFO SISMEMBER STRLEN
-- ERRORS MAXMEMORY UIDRANGE
-- INCLUDE login_index
-- INCLUDE uid_bit
-- IDEMPOTENT yes: the bits and the type are set already; the expiries are absolute
local refused = uid_refusal(KEYS[1], ARGV[1], ARGV[2])
if refused then
  return refused
end
return 1 - index_login(KEYS[1], KEYS[2], ARGV[1], ARGV[3], ARGV[4])
