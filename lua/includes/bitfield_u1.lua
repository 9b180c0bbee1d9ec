--- The arguments of one BITFIELD over single bits (u1), and its replies folded per item of k bits

-- `u1_ops(offsets, from, op)`: `op` (SET: set the bit to 1, GET: read it)
-- for each of offsets[from..]; returns the arguments and their count.
local function u1_ops(offsets, from, op)
  local args = {}
  local a = 0
  for i = from, #offsets do
    args[a + 1] = op
    args[a + 2] = 'u1'
    args[a + 3] = offsets[i]
    a = a + 3
    if op == 'SET' then
      args[a + 1] = 1
      a = a + 1
    end
  end
  return args, a
end

-- `per_item(bits, k, zero, all_set, out)`: appends to `out`, for each item
-- (k bits after k bits), `zero` when one of its bits is 0, else `all_set`.
local function per_item(bits, k, zero, all_set, out)
  local j = 1
  while j <= #bits do
    local v = all_set
    for b = j, j + k - 1 do
      if bits[b] == 0 then
        v = zero
      end
    end
    out[#out + 1] = v
    j = j + k
  end
  return out
end
