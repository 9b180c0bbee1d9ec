"""The read-write lock's operations (src/rwlock.rs, lua/rwlock)."""

from __future__ import annotations

from typing import Any, Optional

from .. import errors, records, scripts
from .._contract import key
from .._driver import Op
from .._hold import Holder
from .._wait import Attempt, busy_ms, new_token, until_acquired


class RwLock:
    def __init__(self, name: str, lease_ms: int, prefix: str, wait_mode: str, poll_interval_ms: int) -> None:
        self.lease_ms = lease_ms
        self.notified, self.poll_ms = wait_mode == "notified", poll_interval_ms
        self.writer_key = key("rwlock", "writer", prefix=prefix, name=name)
        self.readers_key = key("rwlock", "readers", prefix=prefix, name=name)
        self.intents_key = key("rwlock", "intents", prefix=prefix, name=name)
        self.channel = key("rwlock", "wake", prefix=prefix, name=name)

    def __repr__(self) -> str:
        return f"writer_key={self.writer_key!r}, lease_ms={self.lease_ms}"

    def _attempt(self, role: str, token: str) -> Op[Attempt[records.RwLease]]:
        keys = (self.writer_key, self.readers_key, self.intents_key)
        if role == "read":
            call = scripts.Rwlock.read_acquire(*keys, token, self.lease_ms)
        else:
            call = scripts.Rwlock.write_acquire(*keys, token, self.lease_ms, self.lease_ms)
        reply = int((yield call))
        return (records.RwLease(token, "read" if role == "read" else "write"), None) if reply == 1 else (None, busy_ms(reply))

    def _withdraw(self, token: str) -> Op[None]:
        try:
            yield from self.release(records.RwLease(token, "write"))
        except errors.RedisPatternsError:
            pass

    def try_read(self) -> Op[records.RwLease]:
        return (yield from self.try_as("read", new_token()))

    def try_write(self) -> Op[records.RwLease]:
        return (yield from self.try_as("write", new_token()))

    def try_as(self, role: str, token: str) -> Op[records.RwLease]:
        got, hint = yield from self._attempt(role, token)
        if got is None:
            if role == "write":
                yield from self._withdraw(token)
            raise errors.LockBusy(self.writer_key, hint)
        return got

    def read(self, timeout_ms: int) -> Op[records.RwLease]:
        return (yield from self.wait_as("read", new_token(), timeout_ms))

    def write(self, timeout_ms: int) -> Op[records.RwLease]:
        return (yield from self.wait_as("write", new_token(), timeout_ms))

    def wait_as(self, role: str, token: str, timeout_ms: int) -> Op[records.RwLease]:
        max_wait = self.lease_ms // 2 if role == "write" else None
        try:
            return (yield from until_acquired(
                self.writer_key, self.channel, self.notified, self.poll_ms, timeout_ms,
                lambda: self._attempt(role, token), max_wait))
        except errors.RedisPatternsError:
            if role == "write":
                yield from self._withdraw(token)
            raise

    def holder(self, role: str, timeout_ms: int) -> Holder:
        return Holder(self.writer_key, self.lease_ms, lambda: self.wait_as(role, new_token(), timeout_ms),
                      lambda l: self.extend(l, self.lease_ms), self.release, lambda l: None)

    def release(self, lease: records.RwLease) -> Op[Optional[bool]]:
        if lease.role == "read":
            call = scripts.Rwlock.read_release(self.readers_key, lease.token, self.channel)
        else:
            call = scripts.Rwlock.write_release(self.writer_key, self.intents_key, lease.token, self.channel)
        return int((yield call)) == 1

    def extend(self, lease: records.RwLease, duration_ms: int) -> Op[bool]:
        if lease.role == "read":
            call = scripts.Rwlock.read_extend(self.readers_key, lease.token, duration_ms)
        else:
            call = scripts.Rwlock.write_extend(self.writer_key, lease.token, duration_ms)
        return int((yield call)) == 1


_ = Any
