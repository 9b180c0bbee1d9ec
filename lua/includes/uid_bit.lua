--- A user's bit in a bitmap of user ids (bit uid): the uid within the configured maximum, the bitmap's growth to it under maxmemory
-- INCLUDE memory
-- READS INFO STRLEN
-- ERRORS MAXMEMORY UIDRANGE

-- `uid` and `max_uid` are the scripts' arguments (decimal strings); the
-- maximum is the offset trap guard (a stray uid would allocate up to
-- 512 MB). Returns the refusal (UIDRANGE, MAXMEMORY), or nil.
local function uid_refusal(key, uid, max_uid)
  if tonumber(uid) > tonumber(max_uid) then
    return redis.error_reply('UIDRANGE uid ' .. uid .. ' is above the configured maximum ' .. max_uid)
  end
  return memory_refusal(math.floor(tonumber(uid) / 8) + 1 - redis.call('STRLEN', key), key)
end
