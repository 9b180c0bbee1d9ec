"""A KeyboardInterrupt that lands in the sync driver between two steps of a
waiting acquire ends the run there and then: the run's wake subscription is
closed or kept for the next run, as when the run ends inside, and not left
subscribed until the garbage collector finds the run's generator (which the
exception's traceback keeps alive, as an interactive prompt keeps the last
one). Run by tests/conformance.rs:

    python3 interrupt.py URL

The interrupt is raised in the driver's own frame (redis_patterns._driver._sync)
by a trace function, at its first line event where the run stands in `at`
with the waiter's subscription on the server (`_subscribe`: the SSUBSCRIBE
just sent, its confirmation not read; `wait`: the run waiting on it); then a
second acquire on the same lock waits (and times out), and the server must
count exactly one subscriber on the lock's wake channel: the second run's, or
the first one's taken over. Prints one JSON line; exits 1 naming what
failed."""

import json
import sys

import redis
from redis_patterns import Lock, _driver
from redis_patterns.errors import LockTimeout

url = sys.argv[1]
probe = redis.Redis.from_url(url)


def subscribers(channel):
    """PUBSUB SHARDNUMSUB's count for `channel` (redis-py parses it into pairs)."""
    reply = probe.execute_command("PUBSUB", "SHARDNUMSUB", channel)
    flat = [x for pair in reply for x in (pair if isinstance(pair, (list, tuple)) else [pair])]
    return int(flat[-1])


def innermost(gen):
    """The name of the function the suspended generator `gen` (and what it yields from) stands in."""
    name = None
    while gen is not None and getattr(gen, "gi_frame", None) is not None:
        name, gen = gen.gi_frame.f_code.co_name, gen.gi_yieldfrom
    return name


def interrupted(lock, at):
    """lock.acquire, interrupted in the driver's frame once its run stands in `at`, subscribed."""
    seen = []

    def local(frame, event, arg):
        if event == "line":
            seen.append(innermost(frame.f_locals.get("calls")))
            if seen[-1] == at and subscribers(lock.channel) > 0:
                raise KeyboardInterrupt
        return local

    def calls(frame, event, arg):
        return local if frame.f_code is _driver._sync.__code__ else None

    sys.settrace(calls)
    try:
        lock.acquire(5000)
    except KeyboardInterrupt as e:
        return e  # kept: its traceback holds the driver's frames
    finally:
        sys.settrace(None)
    raise SystemExit(f"{at}: the acquire returned, not interrupted (the run stood in: {seen})")


def scenario(at):
    name = f"interrupt-{at}"
    Lock(redis.Redis.from_url(url), name).try_acquire()
    waiter = Lock(redis.Redis.from_url(url), name)
    kept = interrupted(waiter, at)
    after_interrupt = subscribers(waiter.channel)
    try:
        waiter.acquire(50)
        raise SystemExit(f"{at}: the second acquire got a held lock")
    except LockTimeout:
        pass
    after_second = subscribers(waiter.channel)
    del kept
    if after_second != 1:
        raise SystemExit(
            f"{at}: {after_second} subscribers on {waiter.channel} after a second wait "
            f"({after_interrupt} right after the interrupt): the interrupted run's subscription was left open")
    return {"interrupted_in": at, "after_interrupt": after_interrupt, "after_second_wait": after_second}


print(json.dumps([scenario("_subscribe"), scenario("wait")]))
