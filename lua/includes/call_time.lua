--- The call's time in unix microseconds: its optional last argument now_us (tests and replays), else the server's TIME
-- READS TIME
-- ERRORS BADARG

-- `argv` is the script's ARGV, `at` the position of now_us (its last
-- entry, when given). Returns the time, or nil and the refusal of more
-- than one now_us.
local function call_time_us(argv, at)
  if #argv > at then
    return nil, redis.error_reply('BADARG argv at most one now_us')
  end
  if #argv == at then
    return tonumber(argv[at])
  end
  local time = redis.call('TIME')
  return time[1] * 1000000 + time[2]
end
