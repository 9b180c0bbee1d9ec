# What bench.py (redis-py, sync) and bench_asyncio.py (redis.asyncio) share:
# the number of rounds, a waiter's place, the clock both processes of a
# handoff read, the pauses, and the figures' JSON line. A module of its own
# because importing bench.py starts a run.
import json
import time

ROUNDS = 5
#: A waiter's place in the queue: the default, a third of the 30 s lease.
PLACE_MS = 10000


def now_us():
    """CLOCK_MONOTONIC in microseconds (the holder and the waiter of a handoff share it)."""
    return time.monotonic_ns() / 1000


def pause_s(i):
    """The idle pause before the i-th idle PING: the i-th handoff's hold, 20 to 29 ms (the
    server and the process idle as long as before a release)."""
    return hold_s(i)


def hold_s(i):
    """How long the holder of the i-th handoff keeps the lock before it releases: 20 to 29 ms."""
    return 0.020 + ((i * 7) % 10) / 1000


def print_figures(ping, idle, waits, floor, pairs):
    """The figures mode's one JSON line (crates/cli/benches/clients.rs reads it): the hot and
    the idle PING (us), the handoffs and the floor's (us), and `pairs`: the pairs/s of ours, raw
    and the raw scripts, then the CPU us per pair of ours and of the raw scripts."""
    ours, raw, scripts, ours_cpu, scripts_cpu = pairs
    print(json.dumps({
        "ping_us": ping,
        "idle_ping_us": idle,
        "handoffs_us": waits,
        "ours_pairs_s": ours,
        "raw_pairs_s": raw,
        "floor_handoffs_us": floor,
        "script_pairs_s": scripts,
        "ours_cpu_us": ours_cpu,
        "script_cpu_us": scripts_cpu,
    }))


def turns(kinds):
    """Each round's order of the measured kinds (the order turns each round, so none is always first)."""
    return [kinds[i % len(kinds):] + kinds[:i % len(kinds)] for i in range(ROUNDS)]
