# The Python client's part of `cargo bench --bench clients` (redis-py, sync
# client; with BENCH_ASYNCIO=1 the same protocol on redis_patterns.asyncio
# and redis.asyncio, raw floors included, see bench_asyncio.py), run by
# crates/cli/benches/clients.rs against the servers it started on loopback:
#
#   python3 bench.py DIR figures PORT ROUNDS PAIRS
#   python3 bench.py DIR fanout URL [URL...] [--cluster]
#
# figures prints one JSON line: the hot PING round trip (median of 2,000),
# one PING after an idle pause as long as a handoff's hold, 20 to 29 ms
# (median of ROUNDS: the server and this process idle as before a release),
# ROUNDS lock
# handoffs (a holder process releases; this process, blocked in acquire,
# returns: microseconds from just before the release is sent, on
# CLOCK_MONOTONIC, which both processes share), ROUNDS handoffs of the floor
# (the same two processes with redis-py alone: the holder's raw EVALSHA of
# the shipped lock/release, whose SPUBLISH wakes this process blocked in
# get_message on a raw SSUBSCRIBE, then its raw EVALSHA of lock/acquire; the
# waiter's refused attempt before puts it in the queue, as a client's does),
# and 5 rounds of PAIRS acquire + release pairs/s (try_acquire + release),
# of redis-py's raw SET NX PX + EVALSHA compare-and-delete and of raw
# EVALSHAs of the same two shipped lock scripts the client sends, interleaved
# (the order turns each round) after a warm-up of each, with this process's
# CPU time per pair (time.process_time) of the client's pairs and of the raw
# scripts' (their difference: the client's own CPU per pair).
#
# fanout builds ShardedHash(2,048 shards), calls len once (the client's first
# use: connections, script loads), prints "ready", reads a line, calls len
# again (the call the driver counts on the servers) and prints its JSON.
import json
import os
import statistics
import sys
import time

dir_, mode = sys.argv[1], sys.argv[2]
sys.path.insert(0, dir_)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redis  # noqa: E402
from bench_common import PLACE_MS, hold_s, now_us, pause_s, print_figures, turns  # noqa: E402
from redis_patterns import Lock, ShardedHash  # noqa: E402


def handoffs(port, rounds):
    (to_waiter_r, to_waiter_w), (to_holder_r, to_holder_w) = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        inp, out = os.fdopen(to_holder_r, "r"), os.fdopen(to_waiter_w, "w", buffering=1)
        lock = Lock(redis.Redis(port=port), "bench-handoff", lease_ms=30000)
        for i in range(rounds):
            lease = lock.try_acquire()
            out.write("held\n")
            inp.readline()  # the waiter is about to wait
            time.sleep(hold_s(i))
            t = now_us()
            lock.release(lease.token)
            out.write(f"{t}\n")
            inp.readline()  # the waiter has it and gave it back
        os._exit(0)
    inp, out = os.fdopen(to_waiter_r, "r"), os.fdopen(to_holder_w, "w", buffering=1)
    lock = Lock(redis.Redis(port=port), "bench-handoff", lease_ms=30000)
    waits = []
    for _ in range(rounds):
        inp.readline()
        out.write("waiting\n")
        lease = lock.acquire(10000)
        done = now_us()
        waits.append(done - float(inp.readline()))
        lock.release(lease.token)
        out.write("next\n")
    os.waitpid(pid, 0)
    return waits


class RawLock:
    """The shipped lock scripts sent by redis-py alone (EVALSHA), on the client's keys."""

    def __init__(self, r, name):
        keys = Lock(r, name, lease_ms=30000)
        self.r, self.key, self.channel = r, keys.key, keys.channel
        self.acquire_keys = (keys.key, keys.fence_key, keys.queue_key, keys.places_key)
        self.release_keys = (keys.key, keys.queue_key, keys.places_key)
        lua = os.path.join(dir_, "redis_patterns", "lua", "lock")
        self.acquire_sha, self.release_sha = (
            r.script_load(open(os.path.join(lua, f), "rb").read()) for f in ("acquire.lua", "release.lua"))

    def attempt(self, token, place_ms=0):
        """lock/acquire: the fence (> 0), or a refusal (<= 0; with place_ms the token waits in the queue)."""
        return int(self.r.evalsha(self.acquire_sha, 4, *self.acquire_keys, token, 30000, place_ms, 0))

    def acquire(self, token, place_ms=0):
        fence = self.attempt(token, place_ms)
        assert fence > 0, fence

    def release(self, token):
        assert self.r.evalsha(self.release_sha, 3, *self.release_keys, token, self.channel) == 1


def floor_handoffs(port, rounds):
    """The handoff with redis-py alone: the same exchange, no client."""
    (to_waiter_r, to_waiter_w), (to_holder_r, to_holder_w) = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        inp, out = os.fdopen(to_holder_r, "r"), os.fdopen(to_waiter_w, "w", buffering=1)
        lock = RawLock(redis.Redis(port=port), "bench-floor")
        for i in range(rounds):
            token = os.urandom(16).hex()
            lock.acquire(token)
            out.write("held\n")
            inp.readline()  # the waiter is about to wait
            time.sleep(hold_s(i))
            t = now_us()
            lock.release(token)
            out.write(f"{t}\n")
            inp.readline()  # the waiter has it and gave it back
        os._exit(0)
    inp, out = os.fdopen(to_waiter_r, "r"), os.fdopen(to_holder_w, "w", buffering=1)
    r = redis.Redis(port=port)
    lock = RawLock(r, "bench-floor")
    sub = r.pubsub()
    sub.ssubscribe(lock.channel)
    while (sub.get_message(timeout=1.0) or {}).get("type") != "ssubscribe":
        pass
    waits = []
    for _ in range(rounds):
        inp.readline()
        token = os.urandom(16).hex()
        assert lock.attempt(token, PLACE_MS) <= 0  # refused: the token waits in the queue, as a waiter's does
        out.write("waiting\n")
        while (sub.get_message(timeout=10.0) or {}).get("type") != "smessage":
            pass
        lock.acquire(token, PLACE_MS)
        done = now_us()
        waits.append(done - float(inp.readline()))
        lock.release(token)
        while (sub.get_message(timeout=1.0) or {}).get("type") != "smessage":  # its own release's message
            pass
        out.write("next\n")
    sub.close()
    os.waitpid(pid, 0)
    return waits


def pairs(r, n):
    lock = Lock(r, "bench-pairs", lease_ms=30000)
    scripts = RawLock(r, "bench-scripts")
    cad = r.script_load("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0")

    def ours_pairs(k):
        for _ in range(k):
            lease = lock.try_acquire()
            lock.release(lease.token)

    def raw_pairs(k):
        for _ in range(k):
            token = os.urandom(16).hex()
            assert r.set("bench-raw", token, nx=True, px=30000)
            assert r.evalsha(cad, 1, "bench-raw", token) == 1

    def script_pairs(k):
        for _ in range(k):
            token = os.urandom(16).hex()
            scripts.acquire(token)
            scripts.release(token)

    def timed(f):
        """Pairs/s, and this process's CPU microseconds per pair."""
        c, t = time.process_time(), time.perf_counter()
        f(n)
        return n / (time.perf_counter() - t), (time.process_time() - c) / n * 1e6

    kinds = [ours_pairs, raw_pairs, script_pairs]
    for f in kinds:
        f(n // 10)
    got = {f: [] for f in kinds}
    for order in turns(kinds):
        for f in order:
            got[f].append(timed(f))
    rate = {f: [r for r, _ in got[f]] for f in kinds}
    cpu = {f: [c for _, c in got[f]] for f in kinds}
    return rate[ours_pairs], rate[raw_pairs], rate[script_pairs], cpu[ours_pairs], cpu[script_pairs]


def figures(port, rounds, n):
    r = redis.Redis(port=port)
    pings = []
    for _ in range(2000):
        t = now_us()
        r.ping()
        pings.append(now_us() - t)
    idle = []
    for i in range(rounds):
        time.sleep(pause_s(i))
        t = now_us()
        r.ping()
        idle.append(now_us() - t)
    waits = handoffs(port, rounds)
    floor = floor_handoffs(port, rounds)
    print_figures(statistics.median(pings), statistics.median(idle), waits, floor, pairs(r, n))


def fanout(urls, cluster):
    r = redis.RedisCluster.from_url(urls[0]) if cluster else redis.Redis.from_url(urls[0])
    h = ShardedHash(r, "bench-fan", shards=2048)
    h.len()
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps({"len": h.len()}), flush=True)


if os.environ.get("BENCH_ASYNCIO") == "1":
    import bench_asyncio  # noqa: E402

    bench_asyncio.main(dir_, mode, sys.argv[3:])
elif mode == "figures":
    figures(int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
else:
    fanout([a for a in sys.argv[3:] if not a.startswith("--")], "--cluster" in sys.argv)
