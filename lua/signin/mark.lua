#!lua
--- Mark a user signed in on a day (SETBIT <day> <uid> 1), refusing uids above the configured maximum
-- KEYS[1] day string rw: the day's sign-in bitmap, `<prefix>:<YYYYMMDD>` (bit uid)
-- ARGV[1] uid integer 0..999999999999999: the user id, 0 to max_uid (the bit offset)
-- ARGV[2] max_uid integer 0..4294967295: the configured maximum user id (the offset trap guard)
-- ARGV[3] expire_at integer 0..999999999999999: unix seconds at which the bitmap expires, 0 to keep it
-- RETURNS integer: 1 when the user had not signed in that day yet, 0 otherwise
-- WRITES EXPIREAT SETBIT
-- READS INFO STRLEN
-- ERRORS MAXMEMORY UIDRANGE
-- INCLUDE uid_bit
-- IDEMPOTENT yes: the bit is set already; the expiry is absolute
local refused = uid_refusal(KEYS[1], ARGV[1], ARGV[2])
if refused then
  return refused
end
local before = redis.call('SETBIT', KEYS[1], ARGV[1], '1')
if ARGV[3] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[3])
end
return 1 - before
