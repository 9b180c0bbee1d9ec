"""The lock's operations (src/lock, lua/lock)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import redis

from .. import errors, records, scripts
from .._contract import key
from .._driver import Cmd, Op, each, text
from .._hold import Holder
from .._wait import Attempt, QueuedResource, busy_ms, new_token, once


#: What replication "auto" asks for when the lock's primary has replicas: one replica, one second.
DEFAULT_ACKNOWLEDGED = (1, 1000)


def _connected_replicas(info: Any) -> int:
    """connected_slaves of an INFO replication reply (redis-py may have parsed it)."""
    if isinstance(info, dict):
        return int(info.get("connected_slaves", 0))
    for line in text(info).splitlines():
        if line.strip().startswith("connected_slaves:"):
            return int(line.split(":", 1)[1].strip() or 0)
    return 0


class Lock(QueuedResource[records.Lease]):
    def __init__(self, name: str, lease_ms: int, prefix: str, wait_mode: str, poll_interval_ms: int,
                 fair: bool = False, replication: str = "none", replicas: int = 1,
                 replication_timeout_ms: int = 1000, place_ms: int = 0) -> None:
        if replication == "acknowledged" and replicas == 0:
            raise errors.InvalidArgument("replicas", "must be at least 1", None)
        self.name, self.fair = name, fair
        self.replication, self.replicas, self.replication_timeout_ms = replication, replicas, replication_timeout_ms
        self.key = key("lock", "lock", prefix=prefix, name=name)
        self.fence_key = key("lock", "fence", prefix=prefix, name=name)
        super().__init__("lock", name, prefix, self.key, lease_ms, wait_mode, poll_interval_ms, place_ms)

    def __repr__(self) -> str:
        return f"key={self.key!r}, lease_ms={self.lease_ms}"

    def _waits(self) -> Op[Optional[Tuple[int, int]]]:
        """The WAIT an acquire sends after its script (replicas, timeout ms), or None (callers skip
        it for replication "none")."""
        if self.replication == "none":
            return None
        if self.replication == "acknowledged":
            return self.replicas, self.replication_timeout_ms
        # auto: the primary of the lock's slot has replicas (asked once per acquire)
        info = yield Cmd("INFO", "replication", key=self.key)
        return DEFAULT_ACKNOWLEDGED if _connected_replicas(info) > 0 else None

    def _attempt(self, token: str, place_ms: int, waits: Optional[Tuple[int, int]]) -> Op[Attempt[records.Lease]]:
        call = scripts.Lock.acquire(self.key, self.fence_key, self.queue_key, self.places_key, token,
                                    self.lease_ms, place_ms, self.fair, [])
        if waits is None:
            reply = yield call
        else:
            # WAIT right after the script, in one pipeline on one connection to the lock's node.
            reply, acked = each((yield [call, Cmd("WAIT", waits[0], waits[1], key=self.key)]))
            if int(reply) > 0 and int(acked) < waits[0]:
                try:
                    yield from self.release(token)  # its token is never used: free the lock now (best effort)
                except (errors.RedisPatternsError, redis.exceptions.RedisError):
                    pass
                raise errors.NotReplicated(self.key, int(reply), max(int(acked), 0), waits[0])
        if int(reply) > 0:
            return records.Lease(token, int(reply)), None
        return None, busy_ms(int(reply))

    def try_acquire(self) -> Op[records.Lease]:
        return self.try_acquire_as(new_token())  # its op itself: no generator around it

    def try_acquire_as(self, token: str) -> Op[records.Lease]:
        waits = None if self.replication == "none" else (yield from self._waits())
        return (yield from once(self._attempt(token, 0, waits), lambda hint: errors.LockBusy(self.key, hint)))

    def acquire(self, timeout_ms: int) -> Op[records.Lease]:
        return self.acquire_as(new_token(), timeout_ms)

    def acquire_as(self, token: str, timeout_ms: int) -> Op[records.Lease]:
        waits = yield from self._waits()
        return (yield from self._wait_for(token, timeout_ms, lambda place_ms: self._attempt(token, place_ms, waits),
                                          lambda: self.release(token)))

    def release(self, token: str) -> Op[Optional[bool]]:
        reply = yield scripts.Lock.release(self.key, self.queue_key, self.places_key, token, self.channel)
        return int(reply) == 1

    def extend(self, token: str, lease_ms: int) -> Op[bool]:
        return int((yield scripts.Lock.extend(self.key, token, lease_ms))) == 1

    def owned(self, token: str) -> Op[Optional[int]]:
        ms = int((yield scripts.Lock.owned(self.key, token)))
        return None if ms == 0 else (ms if ms > 0 else -1)

    def holder(self, timeout_ms: int) -> Holder:
        return self._holding(lambda: self.acquire(timeout_ms), lambda lease: self.extend(lease.token, self.lease_ms),
                             lambda lease: self.release(lease.token), lambda lease: int(lease.fence))

    def status(self) -> Op[records.LockStatus]:
        pttl, fence = yield [Cmd("PTTL", self.key), Cmd("GET", self.fence_key)]
        pttl = int(pttl)
        return records.LockStatus(self.key, pttl != -2, pttl if pttl >= 0 else None, int(fence) if fence else 0)
