--- A request key's remembered result: what the first run of a call with that request id returned
-- READS GET

-- The request key (same slot as the data) holds the first run's result
-- for request_ttl_ms; `ttl` '0' is a call without a request id. Returns
-- the remembered number, or nil. The key is read whatever `ttl` is: the
-- read checks its type before anything is written (the generated checks
-- need no TYPE for it), and it costs less than that TYPE would.
local function replayed(request, ttl)
  local done = redis.call('GET', request)
  if done and ttl ~= '0' then
    return tonumber(done)
  end
  return nil
end
