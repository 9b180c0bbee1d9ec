--- The proto-max-bulk-len probe: whether a string may grow to hold a bit offset, asked of GETBIT (which writes nothing)
-- READS GETBIT
-- ERRORS BADARG

-- A write that would build a string beyond the server's proto-max-bulk-len
-- fails, after the writes before it; GETBIT refuses the same offsets ("bit
-- offset is not an integer or out of range") and writes nothing. Returns
-- the refusal (`BADARG <name> <what> exceeds ...`), or nil and the bit.
-- Any other error of the GETBIT (a key of another type, an ACL without
-- getbit) is raised as the server gave it.
local function bulk_len_refusal(key, bit, name, what)
  local reply = redis.pcall('GETBIT', key, bit)
  if type(reply) == 'table' and reply.err then
    if string.find(reply.err, 'bit offset is not an integer or out of range', 1, true) then
      return redis.error_reply('BADARG ' .. name .. ' ' .. what .. ' exceeds the server\'s proto-max-bulk-len')
    end
    error(reply)
  end
  return nil, reply
end
