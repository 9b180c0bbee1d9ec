--- Whether a visits day still takes visits: before its accept_until and its expire_at, by the server's clock
-- READS TIME
-- ERRORS DAYENDED

-- `expire_at` and `accept_until` are the scripts' arguments (unix seconds,
-- '0' for none). Returns the refusal (DAYENDED), or nil.
local function day_refusal(expire_at, accept_until)
  if expire_at == '0' and accept_until == '0' then
    return nil
  end
  local now = tonumber(redis.call('TIME')[1])
  if accept_until ~= '0' and tonumber(accept_until) <= now then
    return redis.error_reply('DAYENDED accept_until ' .. accept_until .. ' is not after the server time ' .. now)
  end
  if expire_at ~= '0' and tonumber(expire_at) <= now then
    return redis.error_reply('DAYENDED expire_at ' .. expire_at .. ' is not after the server time ' .. now)
  end
  return nil
end
