--- The maxmemory headroom check of a script that grows a string by more than 64 KiB, before any write
-- READS INFO
-- ERRORS MAXMEMORY

-- Redis checks maxmemory only before a script starts, so a growth of more
-- than 64 KiB is checked here, before any write (the rule of
-- src/core/memory.rs; smaller ones are left to Redis). `grow` is the
-- growth in bytes, `what` names it in the refusal (a key, `3 blocks`).
-- (A user whose ACL denies INFO gets the server's own check only.)
local function memory_refusal(grow, what)
  if grow <= 65536 then
    return nil
  end
  local mem = redis.pcall('INFO', 'memory')
  if type(mem) ~= 'string' then
    mem = ''
  end
  local maxmemory = tonumber(string.match(mem, '\nmaxmemory:(%d+)')) or 0
  local used = tonumber(string.match(mem, '\nused_memory:(%d+)')) or 0
  if string.find(mem, '\nmaxmemory_policy:allkeys', 1, true) then
    used = used - (tonumber(string.match(mem, '\nused_memory_dataset:(%d+)')) or 0)
  end
  if maxmemory > 0 and used + grow > maxmemory then
    return redis.error_reply('MAXMEMORY needed ' .. grow .. ' available ' .. math.max(maxmemory - used, 0) .. ': growing ' .. what)
  end
  return nil
end
