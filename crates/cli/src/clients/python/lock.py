"""The owner-token lock with fencing tokens (manifest: patterns[lock])."""

import os
import random
import time
from collections import namedtuple

from . import scripts
from ._contract import CONSTANTS, DEFAULTS, key
from ._core import Sleep, runner
from ._errors import InvalidArgument, RedisPatternsError

_C, _D = CONSTANTS["lock"], DEFAULTS["lock"]

#: Proof of ownership: the owner token and the fencing token.
Lease = namedtuple("Lease", "token fence")


class LockBusy(RedisPatternsError):
    """Another owner holds the lock (retry_after_ms: its remaining lease, or None)."""

    def __init__(self, key, retry_after_ms):
        self.key, self.retry_after_ms = key, retry_after_ms
        super().__init__(f"lock {key} is held by another owner")


class LockTimeout(RedisPatternsError):
    """A blocking acquire did not get the lock before its deadline."""

    def __init__(self, key, waited_ms):
        self.key, self.waited_ms = key, waited_ms
        super().__init__(f"timed out after {waited_ms} ms waiting for lock {key}")


def new_token():
    """An unguessable owner token: token_bytes random bytes as lowercase hex."""
    return os.urandom(_C["token_bytes"]).hex()


def _name(what, name):
    if not isinstance(name, str) or not name or "{" in name or "}" in name:
        raise InvalidArgument(what, "must not be empty and must not contain '{' or '}'")


class Lock:
    """A named lock: keys <prefix>{<name>} and <prefix>{<name>}:fence.

    On a redis.Redis every method returns its result; on a redis.asyncio.Redis
    it returns a coroutine."""

    def __init__(self, client, name, lease_ms=_D["lease_ms"], prefix=_D["prefix"], retry_ms=_D["retry_ms"]):
        _name("lock name", name)
        if "{" in prefix or "}" in prefix:
            raise InvalidArgument("prefix", "must not contain '{' or '}'")
        if isinstance(lease_ms, bool) or not isinstance(lease_ms, int) or not 1 <= lease_ms <= _C["max_lease_ms"]:
            raise InvalidArgument("lease", f"must be from 1 to {_C['max_lease_ms']} ms")
        if retry_ms <= 0:
            raise InvalidArgument("retry interval", "must be greater than zero")
        self._run = runner(client)
        self.key = key("lock", "lock", prefix=prefix, name=name)
        self.fence_key = key("lock", "fence", prefix=prefix, name=name)
        self.wake = key("lock", "wake", prefix=prefix, name=name)
        self.lease_ms, self.retry_ms = lease_ms, retry_ms

    def _try(self):
        token = new_token()
        reply = yield scripts.Lock.acquire(self.key, self.fence_key, token, self.lease_ms, [])
        if reply > 0:
            return Lease(token, reply)
        raise LockBusy(self.key, -reply if reply < 0 else None)

    def try_acquire(self):
        """One attempt: a Lease, or LockBusy."""
        return self._run(self._try())

    def _acquire(self, timeout_ms):
        started = time.monotonic()
        while True:
            try:
                return (yield from self._try())
            except LockBusy:
                waited = (time.monotonic() - started) * 1000
                if waited >= timeout_ms:
                    raise LockTimeout(self.key, int(waited)) from None
                wait = self.retry_ms * (0.5 + random.random())
                yield Sleep(min(wait, timeout_ms - waited) / 1000)

    def acquire(self, timeout_ms):
        """Tries until it gets the lock (a Lease) or timeout_ms passed (LockTimeout)."""
        return self._run(self._acquire(timeout_ms))

    def release(self, token):
        """Releases the lock if token owns it (publishing on the wake channel); False when it does not (left intact)."""
        return self._run(self._bool(scripts.Lock.release(self.key, token, self.wake)))

    def extend(self, token, lease_ms):
        """A fresh lease of lease_ms from now, only for the owner; False otherwise."""
        return self._run(self._bool(scripts.Lock.extend(self.key, token, lease_ms)))

    def owned(self, token):
        """The remaining lease in ms when token owns the lock (-1: no TTL), else None."""
        return self._run(self._owned(token))

    def _owned(self, token):
        ms = yield scripts.Lock.owned(self.key, token)
        return None if ms == 0 else ms

    @staticmethod
    def _bool(call):
        return (yield call) == 1
