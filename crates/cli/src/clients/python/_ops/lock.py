"""The lock's operations (src/lock, lua/lock)."""

from __future__ import annotations

from typing import Any, List, Optional

from .. import errors, records, scripts
from .._contract import key
from .._driver import Cmd, Op
from .._hold import Holder
from .._wait import Attempt, busy_ms, new_token, until_acquired


class Lock:
    def __init__(self, name: str, lease_ms: int, prefix: str, wait_mode: str, poll_interval_ms: int,
                 fair: bool = False) -> None:
        self.name, self.lease_ms, self.prefix, self.fair = name, lease_ms, prefix, fair
        self.notified, self.poll_ms = wait_mode == "notified", poll_interval_ms
        self.key = key("lock", "lock", prefix=prefix, name=name)
        self.fence_key = key("lock", "fence", prefix=prefix, name=name)
        self.channel = key("lock", "wake", prefix=prefix, name=name)
        self.queue_key = key("lock", "queue", prefix=prefix, name=name)
        self._contended = [False]  # whether the last acquire had to wait
        self.places_key = key("lock", "places", prefix=prefix, name=name)

    def __repr__(self) -> str:
        return f"key={self.key!r}, lease_ms={self.lease_ms}"

    def _attempt(self, token: str, place_ms: int = 0) -> Op[Attempt[records.Lease]]:
        reply = yield scripts.Lock.acquire(self.key, self.fence_key, self.queue_key, self.places_key, token,
                                           self.lease_ms, place_ms, self.fair, [])
        if reply > 0:
            return records.Lease(token, int(reply)), None
        return None, busy_ms(int(reply))

    def try_acquire(self) -> Op[records.Lease]:
        return (yield from self.try_acquire_as(new_token()))

    def try_acquire_as(self, token: str) -> Op[records.Lease]:
        got, hint = yield from self._attempt(token)
        if got is None:
            raise errors.LockBusy(self.key, hint)
        return got

    def acquire(self, timeout_ms: int) -> Op[records.Lease]:
        return (yield from self.acquire_as(new_token(), timeout_ms))

    def acquire_as(self, token: str, timeout_ms: int) -> Op[records.Lease]:
        return (yield from until_acquired(
            self.key, self.channel, self.notified, self.poll_ms, timeout_ms,
            lambda: self._attempt(token, self.lease_ms), self.lease_ms // 2, token, lambda: self.release(token), self._contended))

    def release(self, token: str) -> Op[Optional[bool]]:
        reply = yield scripts.Lock.release(self.key, self.queue_key, self.places_key, token, self.channel)
        return int(reply) == 1

    def extend(self, token: str, lease_ms: int) -> Op[bool]:
        return int((yield scripts.Lock.extend(self.key, token, lease_ms))) == 1

    def owned(self, token: str) -> Op[Optional[int]]:
        ms = int((yield scripts.Lock.owned(self.key, token)))
        return None if ms == 0 else (ms if ms > 0 else -1)

    def holder(self, timeout_ms: int) -> Holder:
        return Holder(self.key, self.lease_ms, lambda: self.acquire(timeout_ms),
                      lambda lease: self.extend(lease.token, self.lease_ms), lambda lease: self.release(lease.token),
                      lambda lease: int(lease.fence))

    def status(self) -> Op[records.LockStatus]:
        pttl, fence = yield [Cmd("PTTL", self.key), Cmd("GET", self.fence_key)]
        pttl = int(pttl)
        return records.LockStatus(self.key, pttl != -2, pttl if pttl >= 0 else None, int(fence) if fence else 0)
