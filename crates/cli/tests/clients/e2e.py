"""Drives every pattern through the generated Python client on the server the
Rust test started, reading what the Rust side wrote first and writing what the
Rust side checks after. Prints a JSON object for the Rust side. Usage:
e2e.py PORT RUST_LOCK_TOKEN"""

import asyncio
import datetime
import json
import sys

import redis
import redis.asyncio

import redis_patterns as rp

port, rust_token = int(sys.argv[1]), sys.argv[2]
r = redis.Redis(port=port)
r.script_flush()  # every first call goes NOSCRIPT -> SCRIPT LOAD -> retry
day, next_day = datetime.date(2024, 2, 29), datetime.date(2024, 3, 1)
out = {}

# lock: the Rust side holds rs-lock; we are not its owner.
rs_lock = rp.Lock(r, "rs-lock", lease_ms=60000)
try:
    rs_lock.try_acquire()
    raise AssertionError("acquired a lock Rust holds")
except rp.LockBusy as e:
    assert e.retry_after_ms and e.retry_after_ms > 0
assert rs_lock.release("not-the-owner") is False
assert rs_lock.extend("not-the-owner", 1000) is False
assert rs_lock.owned(rust_token) > 0
try:
    rs_lock.acquire(100)
    raise AssertionError("acquired a held lock")
except rp.LockTimeout:
    pass
mine = rp.Lock(r, "py-lock", lease_ms=60000)
lease = mine.try_acquire()
assert lease.fence > 0 and len(lease.token) == 32
assert mine.extend(lease.token, 120000) and mine.owned(lease.token) > 60000
out["py_lock_token"] = lease.token
try:
    rp.Lock(r, "x", lease_ms=0)
    raise AssertionError("lease 0 accepted")
except rp.InvalidArgument:
    pass

# visits: Rust counted 1..50.
v = rp.VisitCounter(r, "site", 8, grace_s=None, late_s=None)
assert v.count(day) == 50 and v.contains(day, 7) and not v.contains(day, 77)
assert v.add(day, 50) == rp.visits.Visit(False, 50)
b = v.add_batch(day, list(range(40, 91)) + [90])
assert b.count == 90 and b.new == [False] * 11 + [True] * 40 + [False]
assert v.distinct_over([day, next_day]) == 90

# signin: Rust signed 100 and 200 in on 2024-03-01 (tag app).
s = rp.SignIn(r, tag="app")
assert s.active_any(next_day, next_day) == [100, 200]
assert s.sign_in(300, next_day) and not s.sign_in(300, next_day)
assert s.count_any(day, next_day) == 3 and s.active_every(day, next_day) == []
try:
    s.sign_in(s.max_uid + 1, next_day)
    raise AssertionError("uid above max_uid accepted")
except rp.UidOutOfRange:
    pass

# login_log: Rust recorded client 1001 on 2024-02-29.
lg = rp.LoginLog(r)
assert lg.login_days("client", 1001, datetime.date(2024, 2, 1), next_day) == [day]
assert lg.logged_in_on("client", 1001, day) and lg.days_in_month("client", 1001, 2024, 2) == 1
assert lg.record("client", 1002, next_day) and not lg.record("client", 1002, next_day)
assert lg.record("vip", 7, next_day)
assert lg.active_users("client", day, next_day) == [1001, 1002]
assert lg.all_active_users(day, next_day) == [("client", 1001), ("client", 1002), ("vip", 7)]

# rolling: Rust added tx0..tx29 to m:rs.
st = rp.RollingStore(r, 25, 10, 600000)
assert [f for f, _ in st.recent("m:rs", 3)] == ["tx29", "tx28", "tx27"]
assert st.get("m:rs", "tx29") == {"n": 29}
for i in range(30, 40):
    st.add("m:rs", f"tx{i}", {"n": i})
for i in range(100):
    st.add("m:py", f"tx{i}", {"n": i})
assert 25 <= st.len("m:py") <= st.capacity  # bounded
assert st.recent("m:py", 1) == [("tx99", {"n": 99})] and st.get("m:py", "tx0") is None
other = rp.RollingStore(r, 50, 10, 600000)  # another layout on the same key
try:
    other.add("m:py", "x", 1)
    raise AssertionError("another layout accepted")
except rp.RollingLayout:
    pass

# bloom, sized: Rust created rs-bloom and rs-spread with r0..r99.
for name in ("rs-bloom", "rs-spread"):
    bf = rp.Bloom.open(r, name)
    assert all(bf.multi_exists([f"r{i}" for i in range(100)])), name
    assert bf.multi_add([f"p{i}" for i in range(100)]).count(True) >= 95
try:
    rp.Bloom.create(r, "rs-bloom", 1000, 0.05)
    raise AssertionError("other parameters accepted")
except rp.BloomConfigMismatch:
    pass
for name, spread in (("py-bloom", False), ("py-spread", True)):
    bf = rp.Bloom.create(r, name, 5000, 0.001, spread=spread)
    assert bf.multi_add([f"q{i}" for i in range(100)]).count(True) >= 95
    assert all(bf.multi_exists([f"q{i}" for i in range(100)]))
    assert rp.Bloom.create(r, name, 5000, 0.001, spread=spread).block_bits == bf.block_bits  # opens it

# bloom, JSHash: Rust added rust@example.com.
js = rp.JsHashBloom(r, "bloom_user_email")
assert js.exists("rust@example.com") and js.add("py@example.com")
assert js.multi_exists(["py@example.com", "rust@example.com"]) == [True, True]

# sharded_hash: Rust set alice=1.
h = rp.ShardedHash(r, "users", shards=16)
assert h.get("alice") == b"1" and h.set("bob", "2") and h.incr("n", 5) == 5
assert h.set_many([("c", "3"), ("d", "4"), ("bob", "2")]) == 2 and h.len() == 5
assert h.get_many(["alice", "zz", "d"]) == [b"1", None, b"4"]
# With a request id an increment applies once, however often it is sent.
assert h.incr_once("once", 2, "py-req-1") == 2 and h.incr_once("once", 2, "py-req-1") == 2
assert h.get("once") == b"2"
try:
    h.set("long", "x" * 65)
    raise AssertionError("a value over max_value accepted")
except rp.ListpackValueTooLong:
    pass
u = rp.ShardedHash(r, "underscored", shards=16, separator="_")
assert u.get("alice") == b"1" and u.shard_key("alice").startswith("underscored_") and u.set("bob", "2")
tiny = rp.ShardedHash(r, "tiny", shards=1, max_entries=2)
tiny.set_many([("a", "1"), ("b", "2")])
try:
    tiny.set("c", "3")
    raise AssertionError("a full shard grew")
except rp.ShardFull:
    pass

# packed: Rust added 3 to id 123456's u32.
p = rp.PackedRecords(r, "logins", 4, 1_000_000)
assert p.get(123456) == (3).to_bytes(4, "little")
assert p.add(123456, 0, 4, False, 1) == 4
assert p.add_once(9, 0, 4, False, 3, "py-req-2") == 3 and p.add_once(9, 0, 4, False, 3, "py-req-2") == 3
p.set(7, (7).to_bytes(4, "little"))
assert p.compare_and_set(7, (8).to_bytes(4, "little"), b"\0" * 4) == (False, (7).to_bytes(4, "little"))
try:
    p.add(8, 0, 1, False, 256)
    raise AssertionError("overflow accepted")
except rp.Overflow:
    pass

# A script's own refusal maps to the typed error; the client refuses first.
try:
    rp.run(r, rp.Call("lock.acquire", ["l{x}", "l{x}:fence"], ["t", "0"]))
    raise AssertionError("BADARG not raised")
except rp.InvalidArgument as e:
    assert e.script == "lock.acquire" and e.name == "lease_ms"


# The same helpers on redis.asyncio.
async def on_asyncio():
    ar = redis.asyncio.Redis(port=port)
    await ar.script_flush()
    alock = rp.Lock(ar, "py-async-lock")
    le = await alock.try_acquire()
    assert await alock.release(le.token)
    av = rp.VisitCounter(ar, "site", 8, grace_s=None, late_s=None)
    assert (await av.add(day, 91)).count == 91
    abf = await rp.Bloom.open(ar, "py-bloom")
    assert await abf.exists("q1")
    ast = rp.RollingStore(ar, 25, 10, 600000)
    assert (await ast.recent("m:py", 1))[0][0] == "tx99"
    await ar.aclose()


asyncio.run(on_asyncio())
print(json.dumps(out))
