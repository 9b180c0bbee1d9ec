--- An expiring map's write, on either path: the pairs it writes, its bounds (the entry limit's FULL refusal, the cap) and the live entries its cap evicts
-- READS HLEN
-- ERRORS FULL

-- `put.lua` and `put_native.lua` differ only in how they learn which
-- fields are live and when entries expire; what they write, when they
-- refuse and what they evict is decided here, once.

-- The pairs of `argv` from `from` on (field, value, ...) that a put
-- writes: `value` maps each field written to its value (the last pair
-- winning, or the first when `nx` is '1'; with `nx`, a field whose
-- entry is `live[f]` is kept), `order` lists those fields once each, in
-- the order first given, and `new` counts those without a live entry.
local function map_put_pairs(argv, from, nx, live)
  local value, order, new = {}, {}, 0
  for i = from, #argv, 2 do
    local f = argv[i]
    if not (nx == '1' and (live[f] or value[f])) then
      if not value[f] then
        order[#order + 1] = f
        if not live[f] then
          new = new + 1
        end
      end
      value[f] = argv[i + 1]
    end
  end
  return value, order, new
end

-- Whether a write that may add `grows` fields to the shard `key` could
-- pass its entry limit `limit` or its cap `cap` (0: none). Only a bound
-- the shard could then pass needs its length (HLEN, which counts entries
-- that have expired and are not removed yet), and only one it would pass
-- by that count needs its live entries listed: then this answers true.
local function map_put_bounded(key, grows, limit, cap)
  if cap == 0 and (limit == 0 or grows == 0) then
    return false
  end
  local len = redis.call('HLEN', key)
  return (cap > 0 and len + grows > cap) or (limit > 0 and len + grows > limit)
end

-- The FULL refusal of a write that would add `grows` fields to the shard
-- `key`, which holds `held` fields counted as live, past its entry limit
-- `limit` (0: none); nil when it stays within.
local function map_put_full(key, held, grows, limit)
  if limit > 0 and held + grows > limit then
    return redis.error_reply('FULL ' .. key .. ' holds ' .. held .. ' live fields; ' .. grows ..
      ' new ones would exceed ' .. limit)
  end
  return nil
end

-- How many of the live entries `kept` (those the write does not rewrite)
-- the cap `cap` (0: none) evicts so that they and the `written` fields fit.
local function map_put_over(kept, written, cap)
  if cap == 0 then
    return 0
  end
  return math.max(0, #kept + written - cap)
end

-- Whether the entry `a` ({field, expiry}: a number, larger later,
-- math.huge for none) goes before `b`: nearest its expiry first, then by
-- field.
local function map_put_sooner(a, b)
  if a[2] ~= b[2] then
    return a[2] < b[2]
  end
  return a[1] < b[1]
end

-- The fields of the `over` entries of `kept` (a list of {field, expiry})
-- that a cap evicts: nearest their expiry first, those without expiry
-- last, then by field.
local function map_put_evicted(kept, over)
  local drop = {}
  if over <= 0 then
    return drop
  end
  table.sort(kept, map_put_sooner)
  for i = 1, math.min(over, #kept) do
    drop[#drop + 1] = kept[i][1]
  end
  return drop
end

-- A put's reply: `new` (fewer than 2^32: the fields of one call) and
-- `evicted` in one integer, new + evicted * 2^32 (exact below 2^53).
local function map_put_reply(new, evicted)
  return new + evicted * 4294967296
end
