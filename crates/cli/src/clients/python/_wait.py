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
from typing import Any, Callable, Generic, List, Optional, Tuple, TypeVar

from . import errors
from ._contract import key
from ._driver import Op, Sleep, Wait
from ._hold import Holder

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


def once(attempt: Op[Attempt[T]], busy: Callable[[Optional[int]], Exception]) -> Op[T]:
    """One attempt's lease, else `busy(hint)` raised (hint: the holder's remaining lease in ms, None: unknown)."""
    got, hint = yield from attempt
    if got is None:
        raise busy(hint)
    return got


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


class QueuedResource(Generic[T]):
    """What the lock, the semaphore and the read-write lock share: the wake channel, the
    queue of waiters and their places (the pattern's `wake`, `queue` and `places` keys),
    how long a place lasts, how to wait and whether the last acquire had to wait (the next
    one subscribes first)."""

    def __init__(self, pattern: str, name: str, prefix: str, wait_key: str, lease_ms: int, wait_mode: str,
                 poll_interval_ms: int, place_ms: int) -> None:
        self.lease_ms, self._wait_key = lease_ms, wait_key
        self.notified, self.poll_ms = wait_mode == "notified", poll_interval_ms
        self.place_ms = place_ms or default_place_ms(lease_ms)
        self.channel = key(pattern, "wake", prefix=prefix, name=name)
        self.queue_key = key(pattern, "queue", prefix=prefix, name=name)
        self.places_key = key(pattern, "places", prefix=prefix, name=name)
        self._contended = [False]

    def _wait_for(self, token: str, timeout_ms: int, attempt: Callable[[int], Op[Attempt[T]]],
                  leave: Callable[[], Op[Any]]) -> Op[T]:
        """Attempts (each renewing the waiter's place) until one gets it; at the timeout `leave` gives the place up."""
        return (yield from until_acquired(
            self._wait_key, self.channel, self.notified, self.poll_ms, timeout_ms, lambda: attempt(self.place_ms),
            self.place_ms // 2, token, leave, self._contended))

    def _holding(self, acquire: Callable[[], Op[T]], extend: Callable[[T], Op[bool]],
                 release: Callable[[T], Op[Optional[bool]]],
                 fence: Callable[[T], Optional[int]] = lambda lease: None) -> Holder:
        """A hold of the resource: `acquire` waits, `extend` renews a lease, `release` gives it back."""
        return Holder(self._wait_key, self.lease_ms, acquire, extend, release, fence)
