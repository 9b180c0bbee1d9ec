--- The arguments of BITFIELD calls over single bits (u1), and their replies folded per item of k bits

-- `u1_calls(offsets, from, op)`: the arguments of the BITFIELD calls that
-- do `op` (SET: set the bit to 1, GET: read it) for each of offsets[from..],
-- in order: one list per call, each within Lua's ~8000-value unpack cap
-- (1999 SETs of 4 values, or 2665 GETs of 3, per call).
local function u1_calls(offsets, from, op)
  local width = op == 'SET' and 4 or 3
  local per_call = math.floor(7996 / width)
  local calls = {}
  local args
  for i = from, #offsets do
    if (i - from) % per_call == 0 then
      args = {}
      calls[#calls + 1] = args
    end
    args[#args + 1] = op
    args[#args + 1] = 'u1'
    args[#args + 1] = offsets[i]
    if op == 'SET' then
      args[#args + 1] = '1'
    end
  end
  return calls
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
