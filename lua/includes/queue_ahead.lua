--- Whether a writer waits ahead of a reader in the read-write lock's queue (queue.lua)
-- INCLUDE queue_role
-- READS ZRANGE ZSCORE

-- The end of the intent of a writer that waits ahead of the reader
-- `token` (nil when none does): a queued reader waits only for the
-- writers that arrived before it; one that is not queued (or not among
-- the first 64) waits for any waiting writer.
local function writer_ahead(queue, intents, now, token)
  if redis.call('ZSCORE', queue, token) then
    for _, t in ipairs(redis.call('ZRANGE', queue, '0', '63')) do
      if t == token then
        return nil
      end
      if waits_to_write(intents, t, now) then
        return tonumber(redis.call('ZSCORE', intents, t))
      end
    end
  end
  local first = redis.call('ZRANGE', intents, '(' .. string.format('%d', now), '+inf', 'BYSCORE', 'LIMIT', '0', '1',
    'WITHSCORES')
  return first[2] and tonumber(first[2])
end
