"""The generated Python client against the golden vectors made by real PHP
(tests/data/*.tsv) and the Rust crate's sized-filter parameters (a TSV the
Rust test writes). Usage: vectors.py JSHASH_TSV SIZED_TSV PARAMS_TSV"""

import sys

import redis_patterns.hashing as rp


def rows(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]


jshash = rows(sys.argv[1])
assert len(jshash) >= 700, len(jshash)
for hex_input, limit, want in jshash:
    got = rp.jshash(bytes.fromhex(hex_input), limit == "1")
    assert got == int(want), (hex_input[:40], limit, got, want)

sized = rows(sys.argv[2])
assert len(sized) >= 60
for hex_input, h1, h2, hb, blocks, k, block, offsets in sized:
    item = bytes.fromhex(hex_input)
    assert rp.sized_hashes(item) == (int(h1), int(h2), int(hb)), hex_input
    got_block, got = rp.sized_offsets(item, [int(b) for b in blocks.split(",")], int(k))
    assert got_block == int(block) and got == [int(o) for o in offsets.split(",")], (hex_input, got_block, got)

params = rows(sys.argv[3])
assert len(params) >= 20
for n, p, m, k, blocks, p_text in params:
    got = rp.bloom_params(int(n), float(p))
    assert got == (int(m), int(k), [int(b) for b in blocks.split(",")]), (n, p, got, m, k, blocks)
    assert rp.format_p(float(p)) == p_text, (p, rp.format_p(float(p)), p_text)

assert rp.crc32("123456789") == 3421780262
print(f"python vectors: {len(jshash)} jshash, {len(sized)} sized, {len(params)} params")
