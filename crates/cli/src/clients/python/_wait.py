"""Notified waiting, written once for the lock, the semaphore and the
read-write lock (the protocol of src/lock/wait.rs; manifest: the `acquire`
protocols): after a refused attempt, subscribe to the resource's wake channel
(a zero-timeout Wait), try once more (a release in between is not missed),
then wait for a release's message or for the holder's remaining lease (plus
1 ms), whichever comes first, and try again, until the timeout
(LockTimeout). A lost message costs at most the holder's lease. Polling mode
sleeps interval * uniform(0.5, 1.5) between attempts instead."""

from __future__ import annotations

import os
import random
import time
from typing import Callable, Optional, Tuple, TypeVar

from . import errors
from ._driver import Op, Sleep, Wait

T = TypeVar("T")

#: One attempt: what it got, or None and the holder's remaining lease in ms (None: unknown).
Attempt = Tuple[Optional[T], Optional[int]]


def busy_ms(reply: int) -> Optional[int]:
    """The remaining lease of a refusal `-<ms>` (0: unknown)."""
    return -reply if reply < 0 else None


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
) -> Op[T]:
    started = time.monotonic()
    subscribed = False
    while True:
        got, hint = yield from attempt()
        if got is not None:
            return got
        waited = (time.monotonic() - started) * 1000
        if waited >= timeout_ms:
            raise errors.LockTimeout(key, int(waited))
        left = timeout_ms - waited
        most = left if max_wait_ms is None else min(left, max_wait_ms)
        if not notified:
            yield Sleep(min(poll_ms * (0.5 + random.random()), most) / 1000)
        elif not subscribed:
            subscribed = True
            yield Wait(channel, 0.0)
        else:
            wait = most if hint is None else min(hint + 1, most)
            yield Wait(channel, wait / 1000)
