# The asyncio half of the Python client's part of `cargo bench --bench
# clients` (bench.py runs it with BENCH_ASYNCIO=1): the same figures and the
# same protocol as bench.py's (see there), every side on asyncio: the client
# is redis_patterns.asyncio on redis.asyncio, the floors raw redis.asyncio
# (EVALSHA of the shipped scripts, SET NX PX + EVALSHA compare-and-delete, a
# raw SSUBSCRIBE waiter). The holder of a handoff is a forked process with an
# event loop of its own; the pipes between the two are read blocking, at
# points where the other side waits for nothing from this loop.
import asyncio
import json
import os
import statistics
import sys
import time

import redis.asyncio
from bench_common import PLACE_MS, hold_s, now_us, pause_s, print_figures, turns
from redis_patterns.asyncio import Lock, ShardedHash


class RawLock:
    """The shipped lock scripts sent by redis.asyncio alone (EVALSHA), on the client's keys."""

    def __init__(self, dir_, r, name):
        keys = Lock(r, name, lease_ms=30000)
        self.r, self.channel = r, keys.channel
        self.acquire_keys = (keys.key, keys.fence_key, keys.queue_key, keys.places_key)
        self.release_keys = (keys.key, keys.queue_key, keys.places_key)
        self.lua = os.path.join(dir_, "redis_patterns", "lua", "lock")

    async def load(self):
        self.acquire_sha, self.release_sha = [
            await self.r.script_load(open(os.path.join(self.lua, f), "rb").read()) for f in ("acquire.lua", "release.lua")]
        return self

    async def attempt(self, token, place_ms=0):
        return int(await self.r.evalsha(self.acquire_sha, 4, *self.acquire_keys, token, 30000, place_ms, 0))

    async def acquire(self, token, place_ms=0):
        fence = await self.attempt(token, place_ms)
        assert fence > 0, fence

    async def release(self, token):
        assert await self.r.evalsha(self.release_sha, 3, *self.release_keys, token, self.channel) == 1


def forked(holder):
    """Forks the holder process (it runs `holder(inp, out)` on a loop of its own); this side's pipes."""
    (to_waiter_r, to_waiter_w), (to_holder_r, to_holder_w) = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        asyncio.run(holder(os.fdopen(to_holder_r, "r"), os.fdopen(to_waiter_w, "w", buffering=1)))
        os._exit(0)
    return pid, os.fdopen(to_waiter_r, "r"), os.fdopen(to_holder_w, "w", buffering=1)


def handoffs(port, rounds):
    async def holder(inp, out):
        lock = Lock(redis.asyncio.Redis(port=port), "bench-handoff", lease_ms=30000)
        for i in range(rounds):
            lease = await lock.try_acquire()
            out.write("held\n")
            inp.readline()
            time.sleep(hold_s(i))
            t = now_us()
            await lock.release(lease.token)
            out.write(f"{t}\n")
            inp.readline()

    pid, inp, out = forked(holder)

    async def waiter():
        lock = Lock(redis.asyncio.Redis(port=port), "bench-handoff", lease_ms=30000)
        waits = []
        for _ in range(rounds):
            inp.readline()
            out.write("waiting\n")
            lease = await lock.acquire(10000)
            done = now_us()
            waits.append(done - float(inp.readline()))
            await lock.release(lease.token)
            out.write("next\n")
        return waits

    waits = asyncio.run(waiter())
    os.waitpid(pid, 0)
    return waits


def floor_handoffs(dir_, port, rounds):
    async def holder(inp, out):
        lock = await RawLock(dir_, redis.asyncio.Redis(port=port), "bench-floor").load()
        for i in range(rounds):
            token = os.urandom(16).hex()
            await lock.acquire(token)
            out.write("held\n")
            inp.readline()
            time.sleep(hold_s(i))
            t = now_us()
            await lock.release(token)
            out.write(f"{t}\n")
            inp.readline()

    pid, inp, out = forked(holder)

    async def next_of(sub, kind, timeout):
        while ((await sub.get_message(timeout=timeout)) or {}).get("type") != kind:
            pass

    async def waiter():
        r = redis.asyncio.Redis(port=port)
        lock = await RawLock(dir_, r, "bench-floor").load()
        sub = r.pubsub()
        await sub.ssubscribe(lock.channel)
        await next_of(sub, "ssubscribe", 1.0)
        waits = []
        for _ in range(rounds):
            inp.readline()
            token = os.urandom(16).hex()
            assert await lock.attempt(token, PLACE_MS) <= 0
            out.write("waiting\n")
            await next_of(sub, "smessage", 10.0)
            await lock.acquire(token, PLACE_MS)
            done = now_us()
            waits.append(done - float(inp.readline()))
            await lock.release(token)
            await next_of(sub, "smessage", 1.0)  # its own release's message
            out.write("next\n")
        await sub.aclose()
        return waits

    waits = asyncio.run(waiter())
    os.waitpid(pid, 0)
    return waits


async def pairs(dir_, r, n):
    lock = Lock(r, "bench-pairs", lease_ms=30000)
    scripts = await RawLock(dir_, r, "bench-scripts").load()
    cad = await r.script_load("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0")

    async def ours_pairs(k):
        for _ in range(k):
            lease = await lock.try_acquire()
            await lock.release(lease.token)

    async def raw_pairs(k):
        for _ in range(k):
            token = os.urandom(16).hex()
            assert await r.set("bench-raw", token, nx=True, px=30000)
            assert await r.evalsha(cad, 1, "bench-raw", token) == 1

    async def script_pairs(k):
        for _ in range(k):
            token = os.urandom(16).hex()
            await scripts.acquire(token)
            await scripts.release(token)

    async def timed(f):
        """Pairs/s, and this process's CPU microseconds per pair."""
        c, t = time.process_time(), time.perf_counter()
        await f(n)
        return n / (time.perf_counter() - t), (time.process_time() - c) / n * 1e6

    kinds = [ours_pairs, raw_pairs, script_pairs]
    for f in kinds:
        await f(n // 10)
    got = {f: [] for f in kinds}
    for order in turns(kinds):
        for f in order:
            got[f].append(await timed(f))
    rate = {f: [r for r, _ in got[f]] for f in kinds}
    cpu = {f: [c for _, c in got[f]] for f in kinds}
    return rate[ours_pairs], rate[raw_pairs], rate[script_pairs], cpu[ours_pairs], cpu[script_pairs]


async def pings(port, rounds, n):
    r = redis.asyncio.Redis(port=port)
    hot = []
    for _ in range(2000):
        t = now_us()
        await r.ping()
        hot.append(now_us() - t)
    idle = []
    for i in range(rounds):
        await asyncio.sleep(pause_s(i))
        t = now_us()
        await r.ping()
        idle.append(now_us() - t)
    await r.aclose()
    return statistics.median(hot), statistics.median(idle)


async def pairs_on(dir_, port, n):
    r = redis.asyncio.Redis(port=port)
    try:
        return await pairs(dir_, r, n)
    finally:
        await r.aclose()


def figures(dir_, port, rounds, n):
    ping, idle = asyncio.run(pings(port, rounds, n))
    waits = handoffs(port, rounds)
    floor = floor_handoffs(dir_, port, rounds)
    print_figures(ping, idle, waits, floor, asyncio.run(pairs_on(dir_, port, n)))


async def fanout(urls, cluster):
    r = redis.asyncio.RedisCluster.from_url(urls[0]) if cluster else redis.asyncio.Redis.from_url(urls[0])
    h = ShardedHash(r, "bench-fan", shards=2048)
    await h.len()
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps({"len": await h.len()}), flush=True)


def main(dir_, mode, args):
    if mode == "figures":
        figures(dir_, int(args[0]), int(args[1]), int(args[2]))
    else:
        asyncio.run(fanout([a for a in args if not a.startswith("--")], "--cluster" in args))
