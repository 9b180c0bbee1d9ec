"""The semaphore's operations (src/semaphore.rs, lua/semaphore)."""

from __future__ import annotations

from typing import Optional

from .. import errors, records, scripts
from .._contract import key
from .._driver import Op
from .._hold import Holder
from .._wait import Attempt, busy_ms, default_place_ms, new_token, until_acquired


class Semaphore:
    def __init__(self, name: str, limit: int, lease_ms: int, prefix: str, wait_mode: str, poll_interval_ms: int,
                 fair: bool = False, place_ms: int = 0) -> None:
        self.limit, self.lease_ms, self.fair = limit, lease_ms, fair
        self.notified, self.poll_ms = wait_mode == "notified", poll_interval_ms
        self.place_ms = place_ms or default_place_ms(lease_ms)
        self.key = key("semaphore", "permits", prefix=prefix, name=name)
        self.channel = key("semaphore", "wake", prefix=prefix, name=name)
        self.queue_key = key("semaphore", "queue", prefix=prefix, name=name)
        self._contended = [False]  # whether the last acquire had to wait
        self.places_key = key("semaphore", "places", prefix=prefix, name=name)

    def __repr__(self) -> str:
        return f"key={self.key!r}, limit={self.limit}, lease_ms={self.lease_ms}"

    def _attempt(self, token: str, place_ms: int = 0) -> Op[Attempt[records.Permit]]:
        reply = int((yield scripts.Semaphore.acquire(self.key, self.queue_key, self.places_key, token, self.limit,
                                                     self.lease_ms, place_ms, self.fair)))
        return (records.Permit(token), None) if reply == 1 else (None, busy_ms(reply))

    def try_acquire(self) -> Op[records.Permit]:
        return (yield from self.try_acquire_as(new_token()))

    def try_acquire_as(self, token: str) -> Op[records.Permit]:
        got, hint = yield from self._attempt(token)
        if got is None:
            raise errors.NoPermit(self.key, hint)
        return got

    def acquire(self, timeout_ms: int) -> Op[records.Permit]:
        return (yield from self.acquire_as(new_token(), timeout_ms))

    def acquire_as(self, token: str, timeout_ms: int) -> Op[records.Permit]:
        return (yield from until_acquired(
            self.key, self.channel, self.notified, self.poll_ms, timeout_ms,
            lambda: self._attempt(token, self.place_ms), self.place_ms // 2, token, lambda: self.release(token), self._contended))

    def holder(self, timeout_ms: int) -> Holder:
        return Holder(self.key, self.lease_ms, lambda: self.acquire(timeout_ms),
                      lambda p: self.extend(p.token, self.lease_ms), lambda p: self.release(p.token), lambda p: None)

    def release(self, token: str) -> Op[Optional[bool]]:
        reply = yield scripts.Semaphore.release(self.key, self.queue_key, self.places_key, token, self.limit,
                                                self.channel)
        return int(reply) == 1

    def extend(self, token: str, lease_ms: int) -> Op[bool]:
        return int((yield scripts.Semaphore.extend(self.key, token, lease_ms))) == 1
