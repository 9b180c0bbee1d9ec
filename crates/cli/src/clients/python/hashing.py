"""The client-side functions of the manifest, bit for bit as the Rust crate
computes them: crc32 shard ids, MurmurHash3 x86 32-bit, the sized Bloom
filters' offsets and block selection, their parameters and size-class block
planning, and PHP's JSHash (with its overflow to float and limitMemory
folding). Every constant comes from the generated _contract."""

from __future__ import annotations

import math
import zlib
from typing import Any, List, Optional, Tuple, Union

from ._contract import CONSTANTS
from .errors import InvalidArgument

_B: Any = CONSTANTS["bloom"]
_M32 = 0xFFFFFFFF


def crc32(data: Union[str, bytes]) -> int:
    """CRC-32/ISO-HDLC of bytes (or of a str's UTF-8)."""
    if isinstance(data, str):
        data = data.encode()
    return zlib.crc32(data) & _M32


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur3_32(data: Union[str, bytes], h: int = 0) -> int:
    """MurmurHash3_x86_32 of `data` with initial hash state `h`."""
    if isinstance(data, str):
        data = data.encode()
    c1, c2 = 0xCC9E2D51, 0x1B873593
    n = len(data)
    end = n - n % 4
    for i in range(0, end, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (_rotl((k * c1) & _M32, 15) * c2) & _M32
        h ^= k
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & _M32
    tail = data[end:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (_rotl((k * c1) & _M32, 15) * c2) & _M32
        h ^= k
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def sized_hashes(item: Union[str, bytes]) -> Tuple[int, int, int]:
    """(h1, h2, hb) of an item under the sized filters' scheme."""
    return (murmur3_32(item, _B["h1_init"]), murmur3_32(item, _B["h2_init"]), murmur3_32(item, _B["hb_init"]))


def select_block(hb: int, block_bits: List[int]) -> int:
    """The block j with S_j <= floor(hb * M / 2^32) < S_(j+1)."""
    x = (hb * sum(block_bits)) >> 32
    start = 0
    for j, bits in enumerate(block_bits):
        if x < start + bits:
            return j
        start += bits
    raise AssertionError("block point beyond the last block")


def sized_offsets(item: Union[str, bytes], block_bits: List[int], k: int) -> Tuple[int, List[int]]:
    """(block, [g_0 .. g_(k-1)]) of an item."""
    h1, h2, hb = sized_hashes(item)
    block = select_block(hb, block_bits)
    bits = block_bits[block]
    return block, [(h1 + i * h2) % bits for i in range(k)]


# PHP's JSHash.

_I64 = 1 << 64
_MIN, _MAX = -(1 << 63), (1 << 63) - 1


def _wrap(v: int) -> int:
    v &= _I64 - 1
    return v - _I64 if v >= 1 << 63 else v


def _php_add(a: Union[int, float], b: int) -> Union[int, float]:
    """PHP's + of a number (int or float) and an int: int, or float on overflow."""
    if isinstance(a, float):
        return a + float(b)
    s = a + b
    if _MIN <= s <= _MAX:
        return s
    return float(a) + float(b)


def _php_int(v: Union[int, float]) -> int:
    """PHP 8's float-to-int conversion of a bitwise operand (64-bit)."""
    if isinstance(v, int):
        return v
    if not math.isfinite(v):
        return 0
    if -9223372036854775808.0 <= v < 9223372036854775808.0:
        return int(v)
    d = math.fmod(v, 18446744073709551616.0)
    if d < 0:
        d += 18446744073709551616.0
    return _wrap(int(d))


def jshash(item: Union[str, bytes], limit_memory: bool = True) -> int:
    """The PHP recipe's BloomFilter::JSHash(item, limitMemory), as PHP 8 computes it."""
    if isinstance(item, str):
        item = item.encode()
    h = _B["jshash_init"]
    for c in item:
        t = _php_add(_php_add(_wrap(h << 5), c), h >> 2)
        h ^= _php_int(t)
    q = abs(h) // 0xFFFFFFFF
    num = (h - (q if h >= 0 else -q) * 0xFFFFFFFF) & 0xFFFFFFFF
    if limit_memory:
        for above, by in _B["jshash_folds"]:
            if num > above:
                num //= by
                break
    return int(num)


# Sized filters: parameters and block planning.


def _size_class(size: int) -> int:
    if size <= _B["min_class"]:
        return int(_B["min_class"])
    lg = (size - 1).bit_length() - 1
    step = 1 << max(lg - _B["lg_classes_per_doubling"], _B["lg_quantum"])
    return int(-(-size // step) * step)


def _class_below(c: int) -> int:
    if c <= _B["min_class"]:
        return 0
    if c <= 2 * _B["min_class"]:
        return int(_B["min_class"])
    lg = (c - 1).bit_length() - 1
    return int(c - (1 << max(lg - _B["lg_classes_per_doubling"], _B["lg_quantum"])))


def _sds_overhead(n: int) -> int:
    h = _B["sds_headers"]
    return int(1 + (h[0] if n < 1 << 8 else h[1] if n < 1 << 16 else h[2] if n < 1 << 32 else h[3]))


def _payload_of_class(c: int) -> int:
    for h in _B["sds_headers"]:
        p = max(0, c - 1 - h)
        if p + _sds_overhead(p) <= c:
            return int(p)
    return 0


def plan_blocks(m: int, max_block_bytes: int) -> List[int]:
    """The usable bits of each block of a filter of m bits (fills size classes)."""
    total = -(-(m + 1) // 8)
    tolerance = max(total // _B["waste_divisor"], _B["min_waste"])
    max_blocks = -(-total // max_block_bytes) + _B["extra_blocks"]
    blocks: List[int] = []
    need = m
    while True:
        need_bytes = -(-(need + 1) // 8)
        c = _size_class(need_bytes + _sds_overhead(need_bytes))
        fill = min(max(_payload_of_class(c), need_bytes), max(max_block_bytes, need_bytes))
        waste = c - need_bytes - _sds_overhead(need_bytes)
        if need_bytes <= max_block_bytes and (waste <= tolerance or len(blocks) + 1 >= max_blocks):
            blocks.append(min(fill, max_block_bytes) * 8 - 1)
            return blocks
        cap = min(need_bytes, max_block_bytes)
        c = _size_class(cap + _sds_overhead(cap))
        while _payload_of_class(c) > cap:
            c = _class_below(c)
        size = max(_payload_of_class(c), _B["min_class"])
        blocks.append(size * 8 - 1)
        need = max(0, need - (size * 8 - 1))
        if need == 0:
            return blocks


def _round_half_away(x: float) -> int:
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def bloom_params(n: int, p: float, max_bits: Optional[int] = None, max_block_bytes: Optional[int] = None) -> Tuple[int, int, List[int]]:
    """(m, k, block_bits) of a sized filter for n items at false-positive rate p."""
    from ._contract import DEFAULTS

    max_bits = DEFAULTS["bloom"]["max_bits"] if max_bits is None else max_bits
    max_block_bytes = _B["max_block_bytes"] if max_block_bytes is None else max_block_bytes
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidArgument("expected items", "must be at least 1", None)
    if not (isinstance(p, (int, float)) and 0.0 < p < 1.0):
        raise InvalidArgument("false-positive rate", f"{p} is not strictly between 0 and 1", None)
    if not 64 <= max_block_bytes <= _B["max_block_bytes"]:
        raise InvalidArgument("max block bytes", f"must be from 64 to {_B['max_block_bytes']}", None)
    ln2 = _B["ln2"]
    mf = math.ceil(-float(n) * math.log(p) / (ln2 * ln2))
    if mf > max_bits:
        raise InvalidArgument("filter size", f"m = {mf} bits exceeds the configured bound of {max_bits} bits", None)
    m = max(1, int(mf))
    k = max(1, _round_half_away((float(m) / float(n)) * ln2))
    if k > _B["max_k"]:
        raise InvalidArgument("false-positive rate", f"{p} needs k = {k} > {_B['max_k']} hash functions", None)
    return m, k, plan_blocks(m, max_block_bytes)


def format_p(p: float) -> str:
    """The config's p field: the shortest round-trip decimal, as Rust's {:?} writes it."""
    s = repr(float(p))
    if "e" in s:
        mant, exp = s.split("e")
        if mant.endswith(".0"):
            mant = mant[:-2]
        return f"{mant}e{int(exp)}"
    return s
