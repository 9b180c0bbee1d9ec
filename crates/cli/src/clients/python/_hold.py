"""The hold idiom: `with lock.hold(timeout_ms=...) as held:` (sync) and
`async with lock.hold(...) as held:` (asyncio) take the lock (waiting as
acquire does), renew its lease every lease/3 while the block runs, release it
after, and report a lost lease: held.lost turns True as soon as a renewal
finds the lock gone or taken (held.check() raises LockLost then), and the
block's end raises LockLost when it was lost and nothing else was raised."""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Any, Optional, Type

from . import errors, records
from ._driver import AsyncRunner, SyncRunner


class Holding:
    """A lock held by a block: its lease, and whether it was lost."""

    def __init__(self, key: str, lease: records.Lease) -> None:
        self.key, self.token, self.fence, self.lost = key, lease.token, lease.fence, False

    def check(self) -> None:
        """LockLost once the lease was lost."""
        if self.lost:
            raise errors.LockLost(self.key, self.fence)

    def __repr__(self) -> str:
        return f"Holding(key={self.key!r}, fence={self.fence}, lost={self.lost})"


class SyncHold:
    def __init__(self, run: SyncRunner, core: Any, timeout_ms: int) -> None:
        self.run, self.core, self.timeout_ms = run, core, timeout_ms
        self.held: Optional[Holding] = None
        self.stop = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def __enter__(self) -> Holding:
        lease = self.run(self.core.acquire(self.timeout_ms))
        held = self.held = Holding(self.core.key, lease)
        self.thread = threading.Thread(target=self._renew, args=(held,), daemon=True)
        self.thread.start()
        return held

    def _renew(self, held: Holding) -> None:
        every = self.core.lease_ms / 3000.0
        while not self.stop.wait(every):
            try:
                if not self.run(self.core.extend(held.token, self.core.lease_ms)):
                    held.lost = True
                    return
            except Exception:
                continue

    def __exit__(self, kind: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        held = self.held
        if held is None:
            return
        if not held.lost:
            held.lost = not self.run(self.core.release(held.token))
        if held.lost and exc is None:
            raise errors.LockLost(held.key, held.fence)


class AsyncHold:
    def __init__(self, run: AsyncRunner, core: Any, timeout_ms: int) -> None:
        self.run, self.core, self.timeout_ms = run, core, timeout_ms
        self.held: Optional[Holding] = None
        self.task: Optional["asyncio.Task[None]"] = None

    async def __aenter__(self) -> Holding:
        lease = await self.run(self.core.acquire(self.timeout_ms))
        held = self.held = Holding(self.core.key, lease)
        self.task = asyncio.ensure_future(self._renew(held))
        return held

    async def _renew(self, held: Holding) -> None:
        every = self.core.lease_ms / 3000.0
        while True:
            await asyncio.sleep(every)
            try:
                if not await self.run(self.core.extend(held.token, self.core.lease_ms)):
                    held.lost = True
                    return
            except asyncio.CancelledError:
                raise
            except Exception:
                continue

    async def __aexit__(self, kind: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except (asyncio.CancelledError, Exception):
                pass
        held = self.held
        if held is None:
            return
        if not held.lost:
            held.lost = not await self.run(self.core.release(held.token))
        if held.lost and exc is None:
            raise errors.LockLost(held.key, held.fence)
