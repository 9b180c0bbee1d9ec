--- A login in the day's index of its user type: the user's bit, the type noted in the month's types set, their expiry
-- WRITES EXPIREAT SADD SETBIT
-- READS EXPIRETIME SISMEMBER

-- `uid`, `user_type` and `expire_at` are the scripts' arguments (unix
-- seconds, '0' to keep the keys). Reads first, then writes, the day index's
-- SETBIT first of them (a uid beyond the server's proto-max-bulk-len fails
-- there, having written nothing): the caller has checked the uid and writes
-- nothing before it. Returns the user's bit in the day index before.
local function index_login(day_index, types, uid, user_type, expire_at)
  local known = redis.call('SISMEMBER', types, user_type)
  -- The types set's expiry only ever moves later.
  local types_at = -1
  if expire_at ~= '0' then
    types_at = redis.call('EXPIRETIME', types)
  end
  local before = redis.call('SETBIT', day_index, uid, '1')
  if known == 0 then
    redis.call('SADD', types, user_type)
  end
  if expire_at ~= '0' then
    redis.call('EXPIREAT', day_index, expire_at)
    if types_at < tonumber(expire_at) then
      redis.call('EXPIREAT', types, expire_at)
    end
  end
  return before
end
