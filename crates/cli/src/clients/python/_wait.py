"""Notified waiting, written once for the lock, the semaphore and the
read-write lock (the protocol of src/lock/wait.rs; manifest: the `acquire`
protocols): after a refused attempt, subscribe to the resource's wake channel
(a zero-timeout Wait), try once more (a release in between is not missed),
then wait for a release's message or for the holder's remaining lease (plus
1 ms), whichever comes first, and try again, until the timeout
(LockTimeout). A lost message costs at most the holder's lease. Polling mode
sleeps interval * uniform(0.5, 1.5) between attempts instead.

Woken one at a time (the lock and the semaphore: `to` is the waiter's token):
a refused attempt keeps the waiter's place in the resource's queue, a release
publishes the token of the next live waiter, and only a message naming this
waiter (or `released`) ends its wait; every wait lasts at most max_wait_ms
(half the place, which each attempt renews). A resource whose last acquire
had to wait subscribes before its first attempt (no second attempt after a
refusal). At the timeout `leave` gives the place up."""

from __future__ import annotations

import os
import random
import time
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from . import errors
from ._driver import Op, Sleep, Wait

T = TypeVar("T")

#: One attempt: what it got, or None and the holder's remaining lease in ms (None: unknown).
Attempt = Tuple[Optional[T], Optional[int]]


def busy_ms(reply: int) -> Optional[int]:
    """The remaining lease of a refusal `-<ms>` (0: unknown)."""
    return -reply if reply < 0 else None


def default_place_ms(lease_ms: int) -> int:
    """How long a waiter keeps its place in the queue unless renewed, by default: a third
    of the lease (at least 1 ms), so that a waiter that disappeared is skipped three times
    sooner than a holder that did; a live waiter renews it every half place."""
    return max(lease_ms // 3, 1)


def new_token() -> str:
    """An unguessable owner token: 16 random bytes as lowercase hex."""
    return os.urandom(16).hex()


def until_acquired(
    key: str,
    channel: str,
    notified: bool,
    poll_ms: int,
    timeout_ms: int,
    attempt: Callable[[], Op[Attempt[T]]],
    max_wait_ms: Optional[int] = None,
    to: Optional[str] = None,
    leave: Optional[Callable[[], Op[Any]]] = None,
    contended: Optional[List[bool]] = None,
) -> Op[T]:
    started = time.monotonic()
    subscribed = False
    refused = False
    if notified and timeout_ms > 0 and contended is not None and contended[0]:
        subscribed = True
        yield Wait(channel, 0.0, to)
    while True:
        got, hint = yield from attempt()
        if got is not None:
            if contended is not None:
                contended[0] = refused
            return got
        refused = True
        waited = (time.monotonic() - started) * 1000
        if waited >= timeout_ms:
            if leave is not None:
                try:
                    yield from leave()
                except Exception:  # the place ends by itself otherwise
                    pass
            raise errors.LockTimeout(key, int(waited))
        left = timeout_ms - waited
        most = left if max_wait_ms is None else min(left, max_wait_ms)
        if not notified:
            yield Sleep(min(poll_ms * (0.5 + random.random()), most) / 1000)
        elif not subscribed:
            subscribed = True
            yield Wait(channel, 0.0, to)
        else:
            wait = most if hint is None else min(hint + 1, most)
            yield Wait(channel, wait / 1000, to)
