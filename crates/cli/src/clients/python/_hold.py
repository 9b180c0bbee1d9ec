"""The hold idiom: `with lock.hold(timeout_ms=...) as held:` (sync) and
`async with lock.hold(...) as held:` (asyncio), for a lock, a semaphore's
permit and a read or write lease: take it (waiting as acquire does), renew its
lease every lease/3 while the block runs, give it back after, and report a
lost lease: held.lost turns True as soon as a renewal finds it gone or taken
(held.check() raises LockLost then), and the block's end raises LockLost when
it was lost and nothing else was raised. Each pattern's operations give a
Holder (what to acquire, extend and release)."""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional, Type

from . import errors

if TYPE_CHECKING:
    from ._driver import AsyncRunner, Op, SyncRunner


class Holder:
    """What a hold does with one resource: acquire within its timeout, extend and release a lease."""

    def __init__(self, key: str, lease_ms: int, acquire: "Callable[[], Op[Any]]", extend: "Callable[[Any], Op[bool]]",
                 release: "Callable[[Any], Op[Optional[bool]]]", fence: Callable[[Any], Optional[int]]) -> None:
        self.key, self.lease_ms = key, lease_ms
        self.acquire, self.extend, self.release, self.fence = acquire, extend, release, fence


class Holding:
    """A lease held by a block: its token, fence (a lock's; None otherwise) and whether it was lost."""

    def __init__(self, holder: Holder, lease: Any) -> None:
        self.key, self.lease = holder.key, lease
        self.token: str = lease.token
        self.fence: Optional[int] = holder.fence(lease)
        self.lost = False

    def check(self) -> None:
        """LockLost once the lease was lost."""
        if self.lost:
            raise errors.LockLost(self.key, self.fence or 0)

    def __repr__(self) -> str:
        return f"Holding(key={self.key!r}, fence={self.fence}, lost={self.lost})"


class SyncHold:
    def __init__(self, run: "SyncRunner", holder: Holder) -> None:
        self.run, self.holder = run, holder
        self.held: Optional[Holding] = None
        self.stop = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def __enter__(self) -> Holding:
        held = self.held = Holding(self.holder, self.run(self.holder.acquire()))
        self.thread = threading.Thread(target=self._renew, args=(held,), daemon=True)
        self.thread.start()
        return held

    def _renew(self, held: Holding) -> None:
        every = self.holder.lease_ms / 3000.0
        while not self.stop.wait(every):
            try:
                if not self.run(self.holder.extend(held.lease)):
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
            held.lost = self.run(self.holder.release(held.lease)) is False
        if held.lost and exc is None:
            raise errors.LockLost(held.key, held.fence or 0)


class AsyncHold:
    def __init__(self, run: "AsyncRunner", holder: Holder) -> None:
        self.run, self.holder = run, holder
        self.held: Optional[Holding] = None
        self.task: Optional["asyncio.Task[None]"] = None

    async def __aenter__(self) -> Holding:
        held = self.held = Holding(self.holder, await self.run(self.holder.acquire()))
        self.task = asyncio.ensure_future(self._renew(held))
        return held

    async def _renew(self, held: Holding) -> None:
        every = self.holder.lease_ms / 3000.0
        while True:
            await asyncio.sleep(every)
            try:
                if not await self.run(self.holder.extend(held.lease)):
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
            held.lost = (await self.run(self.holder.release(held.lease))) is False
        if held.lost and exc is None:
            raise errors.LockLost(held.key, held.fence or 0)
