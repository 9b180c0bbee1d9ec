--- An expiring map's write, on either path: the pairs it writes and the live entries its cap evicts

-- `put.lua` and `put_native.lua` differ only in how they learn which
-- fields are live and when entries expire; what they write and what
-- they evict is decided here, once.

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
  table.sort(kept, map_put_sooner)
  local drop = {}
  for i = 1, math.min(over, #kept) do
    drop[#drop + 1] = kept[i][1]
  end
  return drop
end
