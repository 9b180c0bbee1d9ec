# The Python client's own CPU per try_acquire + release pair, without a
# server: redis-py's execute_command answers from a table (a fence, then 1),
# so what is left is the client (checks, the call, the driver, the result),
# apart from redis-py's I/O and the machine's syscalls, which swing with the
# load far more than the client's few microseconds (see clients.rs):
#
#   python3 canned.py DIR [DIR...] [--pairs N] [--rounds R]
#
# Each DIR holds an exported client (redis-patterns export --lang python);
# several are imported side by side (each copied under a name of its own)
# and measured interleaved, so that a change is compared in one process:
# the minimum over R rounds of N pairs of this process's CPU per pair, minus
# that of the same two canned calls made by hand.
import importlib
import os
import shutil
import sys
import tempfile
import time

import redis


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


dirs = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("--") and not sys.argv[i - 1].startswith("--")]
n, rounds = arg("--pairs", 20000), arg("--rounds", 15)
flip = [0]


def canned(*args, **kw):
    """lock/acquire's fence, then lock/release's 1."""
    flip[0] ^= 1
    return 17 if flip[0] else 1


def pairs_of(pkg):
    r = redis.Redis(port=1)  # never connected
    r.execute_command = canned
    lock = pkg.Lock(r, "canned-pairs", lease_ms=30000)
    lock._run.client.execute_command = canned

    def pairs(k):
        for _ in range(k):
            lock.release(lock.try_acquire().token)
    return pairs


def by_hand(k):
    for _ in range(k):
        token = os.urandom(16).hex()
        assert int(canned("EVALSHA", "a" * 40, 4, "k", "f", "q", "p", token, "30000", "0", "0")) > 0
        assert canned("EVALSHA", "b" * 40, 3, "k", "q", "p", token, "c") == 1


root = tempfile.mkdtemp(prefix="rp-canned-")
kinds = []
for i, d in enumerate(dirs):
    shutil.copytree(os.path.join(d, "redis_patterns"), os.path.join(root, f"rp_canned_{i}"))
sys.path.insert(0, root)
kinds = [pairs_of(importlib.import_module(f"rp_canned_{i}")) for i in range(len(dirs))] + [by_hand]
for f in kinds:
    f(n // 5)
best = [float("inf")] * len(kinds)
for _ in range(rounds):
    for i, f in enumerate(kinds):
        c = time.process_time()
        f(n)
        best[i] = min(best[i], (time.process_time() - c) / n * 1e6)
shutil.rmtree(root)
for d, b in zip(dirs, best):
    print(f"{d}: client CPU per pair {b - best[-1]:.2f} us (min of {rounds} rounds of {n}; canned calls by hand {best[-1]:.2f} us)")
