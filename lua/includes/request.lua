--- A request key's remembered result: what the first run of a call with that request id returned
-- READS GET

-- The request key (same slot as the data) holds the first run's result
-- for request_ttl_ms; `ttl` '0' is a call without a request id. Returns
-- the remembered number, or nil.
local function replayed(request, ttl)
  if ttl == '0' then
    return nil
  end
  local done = redis.call('GET', request)
  if done then
    return tonumber(done)
  end
  return nil
end
