"""The read-write lock's operations (src/rwlock.rs, lua/rwlock)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .. import errors, records, scripts
from .._contract import key
from .._driver import Op
from .._hold import Holder
from .._wait import Attempt, QueuedResource, busy_ms, new_token, once


class RwLock(QueuedResource[records.RwLease]):
    def __init__(self, name: str, lease_ms: int, prefix: str, wait_mode: str, poll_interval_ms: int,
                 fair: bool = False, place_ms: int = 0) -> None:
        self.fair = fair
        self.writer_key = key("rwlock", "writer", prefix=prefix, name=name)
        self.readers_key = key("rwlock", "readers", prefix=prefix, name=name)
        self.intents_key = key("rwlock", "intents", prefix=prefix, name=name)
        super().__init__("rwlock", name, prefix, self.writer_key, lease_ms, wait_mode, poll_interval_ms, place_ms)

    def __repr__(self) -> str:
        return f"writer_key={self.writer_key!r}, lease_ms={self.lease_ms}"

    def _keys(self) -> Tuple[str, str, str, str, str]:
        """writer, readers, intents, queue, places: the keys of every acquire and release."""
        return (self.writer_key, self.readers_key, self.intents_key, self.queue_key, self.places_key)

    def _attempt(self, role: str, token: str, place_ms: int = 0) -> Op[Attempt[records.RwLease]]:
        if role == "read":
            call = scripts.Rwlock.read_acquire(*self._keys(), token, self.lease_ms, place_ms)
        else:
            call = scripts.Rwlock.write_acquire(*self._keys(), token, self.lease_ms, place_ms, self.fair)
        reply = int((yield call))
        return (records.RwLease(token, "read" if role == "read" else "write"), None) if reply == 1 else (None, busy_ms(reply))

    def try_read(self) -> Op[records.RwLease]:
        return self.try_as("read", new_token())  # its op itself: no generator around it

    def try_write(self) -> Op[records.RwLease]:
        return self.try_as("write", new_token())

    def try_as(self, role: str, token: str) -> Op[records.RwLease]:
        return once(self._attempt(role, token), lambda hint: errors.LockBusy(self.writer_key, hint))

    def read(self, timeout_ms: int) -> Op[records.RwLease]:
        return self.wait_as("read", new_token(), timeout_ms)

    def write(self, timeout_ms: int) -> Op[records.RwLease]:
        return self.wait_as("write", new_token(), timeout_ms)

    def wait_as(self, role: str, token: str, timeout_ms: int) -> Op[records.RwLease]:
        lease = records.RwLease(token, "read" if role == "read" else "write")
        return (yield from self._wait_for(token, timeout_ms, lambda place_ms: self._attempt(role, token, place_ms),
                                          lambda: self.release(lease)))

    def holder(self, role: str, timeout_ms: int) -> Holder:
        return self._holding(lambda: self.wait_as(role, new_token(), timeout_ms), lambda l: self.extend(l, self.lease_ms),
                             self.release)

    def release(self, lease: records.RwLease) -> Op[Optional[bool]]:
        release = scripts.Rwlock.read_release if lease.role == "read" else scripts.Rwlock.write_release
        return int((yield release(*self._keys(), lease.token, self.channel))) == 1

    def extend(self, lease: records.RwLease, duration_ms: int) -> Op[bool]:
        if lease.role == "read":
            call = scripts.Rwlock.read_extend(self.readers_key, lease.token, duration_ms)
        else:
            call = scripts.Rwlock.write_extend(self.writer_key, lease.token, duration_ms)
        return int((yield call)) == 1


_ = Any
