"""The semaphore's operations (src/semaphore.rs, lua/semaphore)."""

from __future__ import annotations

from typing import Optional

from .. import errors, records, scripts
from .._contract import key
from .._driver import Op
from .._hold import Holder
from .._wait import Attempt, QueuedResource, busy_ms, new_token, once


class Semaphore(QueuedResource[records.Permit]):
    def __init__(self, name: str, limit: int, lease_ms: int, prefix: str, wait_mode: str, poll_interval_ms: int,
                 fair: bool = False, place_ms: int = 0) -> None:
        self.limit, self.fair = limit, fair
        self.key = key("semaphore", "permits", prefix=prefix, name=name)
        super().__init__("semaphore", name, prefix, self.key, lease_ms, wait_mode, poll_interval_ms, place_ms)

    def __repr__(self) -> str:
        return f"key={self.key!r}, limit={self.limit}, lease_ms={self.lease_ms}"

    def _attempt(self, token: str, place_ms: int = 0) -> Op[Attempt[records.Permit]]:
        reply = int((yield scripts.Semaphore.acquire(self.key, self.queue_key, self.places_key, token, self.limit,
                                                     self.lease_ms, place_ms, self.fair)))
        return (records.Permit(token), None) if reply == 1 else (None, busy_ms(reply))

    def try_acquire(self) -> Op[records.Permit]:
        return self.try_acquire_as(new_token())  # its op itself: no generator around it

    def try_acquire_as(self, token: str) -> Op[records.Permit]:
        return once(self._attempt(token), lambda hint: errors.NoPermit(self.key, hint))

    def acquire(self, timeout_ms: int) -> Op[records.Permit]:
        return self.acquire_as(new_token(), timeout_ms)

    def acquire_as(self, token: str, timeout_ms: int) -> Op[records.Permit]:
        return (yield from self._wait_for(token, timeout_ms, lambda place_ms: self._attempt(token, place_ms),
                                          lambda: self.release(token)))

    def holder(self, timeout_ms: int) -> Holder:
        return self._holding(lambda: self.acquire(timeout_ms), lambda p: self.extend(p.token, self.lease_ms),
                             lambda p: self.release(p.token))

    def release(self, token: str) -> Op[Optional[bool]]:
        reply = yield scripts.Semaphore.release(self.key, self.queue_key, self.places_key, token, self.limit,
                                                self.channel)
        return int(reply) == 1

    def extend(self, token: str, lease_ms: int) -> Op[bool]:
        return int((yield scripts.Semaphore.extend(self.key, token, lease_ms))) == 1
