#!lua flags=no-writes
--- Read the newest records of a rolling sharded store, newest first
-- KEYS[1] meta hash ro: the store's index hash
-- KEYS[2..] slots hash,list ro: hash and order list of every ring slot, slot 0 first (hash, order, hash, order, ...)
-- ARGV[1] n integer 0..999999999999999: how many records at most
-- RETURNS bulks: field, value, field, value, ... newest first; a field stored in several shards
--    appears once, with its newest value
-- READS HMGET LLEN LRANGE
-- ERRORS BADARG RINGCONF
-- INCLUDE ring
local want = tonumber(ARGV[1])
local shards = (#KEYS - 1) / 2
if shards < 2 or shards ~= math.floor(shards) then
  return redis.error_reply('BADARG slots pass the meta key and a (hash, order) key pair per ring slot')
end
-- Every order list's length is read first (each read checks the list's
-- type), before anything is returned.
local lens = {}
for i = 3, #KEYS, 2 do
  local len = redis.call('LLEN', KEYS[i])
  lens[i] = len
end
local out = {}
if want == 0 then
  return out
end
local refused, head = ring_head(KEYS[1], shards)
if not head then
  return refused or out
end
local seen = {}
local count = 0
local chunk = 500
for i = 0, shards - 1 do
  if count >= want then
    break
  end
  local slot = (head - i) % shards
  local hash, order = KEYS[2 + 2 * slot], KEYS[3 + 2 * slot]
  local len = lens[3 + 2 * slot]
  local stop = len - 1
  while count < want and stop >= 0 do
    local start = math.max(0, stop - chunk + 1)
    local fields = redis.call('LRANGE', order, start, stop)
    local values = redis.call('HMGET', hash, unpack(fields))
    for j = #fields, 1, -1 do
      local f = fields[j]
      if values[j] and not seen[f] then
        seen[f] = true
        out[#out + 1] = f
        out[#out + 1] = values[j]
        count = count + 1
        if count >= want then
          break
        end
      end
    end
    stop = start - 1
  end
end
return out
