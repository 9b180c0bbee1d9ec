# The Python client's part of `cargo bench --bench clients` (redis-py, sync
# client), run by crates/cli/benches/clients.rs against the servers it
# started on loopback:
#
#   python3 bench.py DIR figures PORT ROUNDS PAIRS
#   python3 bench.py DIR fanout URL [URL...] [--cluster]
#
# figures prints one JSON line: the hot PING round trip (median of 2,000),
# one PING after an idle pause of 2 to 11 ms (median of ROUNDS), ROUNDS lock
# handoffs (a holder process releases; this process, blocked in acquire,
# returns: microseconds from just before the release is sent, on
# CLOCK_MONOTONIC, which both processes share), and 5 rounds of PAIRS
# acquire + release pairs/s (try_acquire + release) and of redis-py's raw
# SET NX PX + EVALSHA compare-and-delete, interleaved (a b, b a, ...) after
# a warm-up of each.
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
import redis  # noqa: E402
from redis_patterns import Lock, ShardedHash  # noqa: E402


ROUNDS = 5


def now_us():
    return time.monotonic_ns() / 1000


def pause_s(i):
    return (2 + (i * 7) % 10) / 1000


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
            time.sleep(0.020 + ((i * 7) % 10) / 1000)
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


def pairs(r, n):
    lock = Lock(r, "bench-pairs", lease_ms=30000)
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

    def timed(f):
        t = time.perf_counter()
        f(n)
        return n / (time.perf_counter() - t)

    ours_pairs(n // 10)
    raw_pairs(n // 10)
    ours, raw = [], []
    for i in range(ROUNDS):
        if i % 2 == 0:
            ours.append(timed(ours_pairs))
            raw.append(timed(raw_pairs))
        else:
            raw.append(timed(raw_pairs))
            ours.append(timed(ours_pairs))
    return ours, raw


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
    ours, raw = pairs(r, n)
    print(json.dumps({
        "ping_us": statistics.median(pings),
        "idle_ping_us": statistics.median(idle),
        "handoffs_us": waits,
        "ours_pairs_s": ours,
        "raw_pairs_s": raw,
    }))


def fanout(urls, cluster):
    r = redis.RedisCluster.from_url(urls[0]) if cluster else redis.Redis.from_url(urls[0])
    h = ShardedHash(r, "bench-fan", shards=2048)
    h.len()
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps({"len": h.len()}), flush=True)


if mode == "figures":
    figures(int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
else:
    fanout([a for a in sys.argv[3:] if not a.startswith("--")], "--cluster" in sys.argv)
