#!lua
--- Record a login: set the day's bit in the user's monthly log and the user's bit in the day's index of its type
-- KEYS[1] log string rw: the user's monthly log, the PHP login-log recipe's `<prefix><YYYY-MM>_<type>_<uid>` (bit n = day n of the month);
--    it has no hash tag (the recipe's layout), so this script is for a single server or for keys that share
--    a slot: on a cluster the Rust API runs login_log.mark and login_log.index instead
-- KEYS[2] day_index string rw: the day's bitmap of user ids of this type (bit uid)
-- KEYS[3] types set rw: the month's set of user types seen (for "all users" queries)
-- ARGV[1] day integer 1..31: the day of the month
-- ARGV[2] uid integer 0..999999999999999: the user id, 0 to max_uid (the bit offset in day_index)
-- ARGV[3] max_uid integer 0..4294967295: the configured maximum user id (the offset trap guard)
-- ARGV[4] user_type string nonempty: the user type, as in the log key
-- ARGV[5] log_expire_at integer 0..999999999999999: unix seconds at which the log expires, 0 to keep it
-- ARGV[6] index_expire_at integer 0..999999999999999: unix seconds at which the day index and types expire, 0 to keep them
-- RETURNS integer: 1 when this is the user's first login recorded that day, 0 otherwise
-- WRITES EXPIREAT SADD SETBIT
-- READS EXPIRETIME INFO SISMEMBER STRLEN
-- ERRORS MAXMEMORY UIDRANGE
-- INCLUDE login_index
-- INCLUDE uid_bit
-- IDEMPOTENT yes: the bits and the type are set already; the expiries are absolute

-- The index half (login_log.index) first, its SETBIT the first write (see
-- lua/includes/login_index.lua), then the log's bit (login_log.mark).
local refused = uid_refusal(KEYS[2], ARGV[2], ARGV[3])
if refused then
  return refused
end
index_login(KEYS[2], KEYS[3], ARGV[2], ARGV[4], ARGV[6])
local before = redis.call('SETBIT', KEYS[1], ARGV[1], '1')
if ARGV[5] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[5])
end
return 1 - before
