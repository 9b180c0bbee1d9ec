"""Packed records (src/packed.rs, lua/packed)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .. import errors, records, scripts
from .._contract import key
from .._driver import Cmd, Op, Request, each
from . import layout
from .sharded_hash import no_request_key, request_key

MAX_SHARD_BYTES = 512 * 1024 * 1024
DEFAULT_SHARD_BYTES = 65_530
SCAN_BATCH_BYTES = 16 << 20


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


class PackedRecords:
    def __init__(self, base: str, width: int, max_id: int, ids_per_shard: int, layout_kind: str, record_layout: bool) -> None:
        if not base:
            raise _bad("base", "must not be empty")
        if width == 0:
            raise _bad("width", "must be at least 1 byte")
        if width > MAX_SHARD_BYTES:
            raise _bad("width", f"must be at most {MAX_SHARD_BYTES} bytes")
        ids = ids_per_shard or max(DEFAULT_SHARD_BYTES // width, 1)
        if ids * width > MAX_SHARD_BYTES:
            raise _bad("ids per shard", f"{ids} records of {width} bytes exceed the {MAX_SHARD_BYTES}-byte string limit")
        self.base, self.width, self.max_id, self.ids_per_shard = base, width, max_id, ids
        self.dense = layout_kind == "dense"
        self.shards = max_id // ids + 1
        self.meta_key = key("packed", "meta", base=base)
        self._layout = layout.LayoutClaim(self.meta_key, self._fields, record_layout)

    def __repr__(self) -> str:
        return f"base={self.base!r}, width={self.width}, max_id={self.max_id}"

    def _fields(self) -> Dict[str, str]:
        return {"pattern": "packed", "version": "1", "width": str(self.width), "ids_per_shard": str(self.ids_per_shard)}

    def key_of_shard(self, shard: int) -> str:
        return key("packed", "shard", base=self.base, shard=shard)

    def locate(self, id: int) -> Tuple[str, int]:
        if id > self.max_id:
            raise errors.IdOutOfRange(id, self.max_id)
        return self.key_of_shard(id // self.ids_per_shard), (id % self.ids_per_shard) * self.width

    def _reserve(self) -> int:
        return self.ids_per_shard * self.width if self.dense else 0

    def _padded(self, b: Optional[bytes]) -> bytes:
        return (bytes(b or b"") + bytes(self.width))[: self.width]

    def _record(self, v: bytes) -> bytes:
        if len(v) != self.width:
            raise _bad("record", f"is {len(v)} bytes, the width is {self.width}")
        return v

    def claim_layout(self) -> Op[None]:
        return self._layout.claim()

    def get(self, id: int) -> Op[bytes]:
        k, off = self.locate(id)
        return self._padded((yield Cmd("GETRANGE", k, off, off + self.width - 1)))

    def get_many(self, ids: Sequence[int]) -> Op[List[bytes]]:
        located = [self.locate(i) for i in ids]
        if not located:
            return []
        got = each((yield [Cmd("GETRANGE", k, off, off + self.width - 1) for k, off in located]))
        return [self._padded(b) for b in got]

    def set(self, id: int, value: bytes) -> Op[None]:
        yield from self.set_many([(id, value)])

    def set_many(self, items: Sequence[Tuple[int, bytes]]) -> Op[None]:
        by_shard: Dict[int, List[bytes]] = {}
        for id, value in items:
            _, off = self.locate(id)
            by_shard.setdefault(id // self.ids_per_shard, []).extend([str(off).encode(), self._record(value)])
        yield from self._layout.before_write()
        batch: List[Request] = [scripts.Packed.put(self.key_of_shard(s), self._reserve(), by_shard[s]) for s in sorted(by_shard)]
        if batch:
            each((yield batch))

    def _add(self, id: int, offset: int, size: int, signed: bool, delta: int, request: Optional[Tuple[str, int]]) -> Op[int]:
        self._field(offset, size)
        if abs(delta) > 1 << 53:
            raise _bad("delta", "must be within +-2^53")
        k, off = self.locate(id)
        rk, ttl = (request_key(k, request[0]), request[1]) if request else (no_request_key(k), 0)
        yield from self._layout.before_write()
        return int((yield scripts.Packed.add(k, rk, self._reserve(), off + offset, size, signed, delta, ttl)))

    def add(self, id: int, offset: int, size: int, signed: bool, delta: int) -> Op[int]:
        return (yield from self._add(id, offset, size, signed, delta, None))

    def add_once(self, id: int, offset: int, size: int, signed: bool, delta: int, request_id: str, request_ttl_ms: int) -> Op[int]:
        return (yield from self._add(id, offset, size, signed, delta, (request_id, request_ttl_ms)))

    def compare_and_set(self, id: int, expected: bytes, new: bytes) -> Op[Optional[bytes]]:
        k, off = self.locate(id)
        exp, nw = self._record(expected), self._record(new)
        yield from self._layout.before_write()
        done, current = yield scripts.Packed.swap(k, self._reserve(), off, exp, nw)
        return None if int(done) == 1 else self._padded(current)

    def scan(self) -> Op[List[Tuple[int, bytes]]]:
        per = max(SCAN_BATCH_BYTES // (self.ids_per_shard * self.width), 1)
        out: List[Tuple[int, bytes]] = []
        for first in range(0, self.shards, per):
            shards = range(first, min(first + per, self.shards))
            got = each((yield [Cmd("GET", self.key_of_shard(s)) for s in shards]))
            for s, b in zip(shards, got):
                if b is None:
                    continue
                b = bytes(b)
                for i in range(len(b) // self.width):
                    id = s * self.ids_per_shard + i
                    if id > self.max_id:
                        break
                    out.append((id, b[i * self.width : (i + 1) * self.width]))
        return out

    def _field(self, offset: int, size: int) -> None:
        if not 1 <= size <= 6:
            raise _bad("field size", "must be 1 to 6 bytes")
        if offset + size > self.width:
            raise _bad("field", f"bytes {offset}..{offset + size} lie outside the {self.width}-byte record")

    def count_by(self, offset: int, size: int, signed: bool) -> Op[List[Tuple[int, int]]]:
        self._field(offset, size)
        counts: Dict[int, int] = {}
        for _, rec in (yield from self.scan()):
            if any(rec):
                v = int.from_bytes(rec[offset:offset + size], "little", signed=signed)
                counts[v] = counts.get(v, 0) + 1
        return sorted(counts.items())

    @staticmethod
    def stored_layout(base: str) -> Op[Optional[records.PackedLayout]]:
        meta, stored = yield from layout.Layouts.stored("packed", base)
        if stored is None:
            return None
        try:
            return records.PackedLayout(int(stored["width"]), int(stored["ids_per_shard"]))
        except (KeyError, ValueError):
            raise errors.LayoutMismatch(meta, str(stored), "a packed layout of version 1") from None

    @staticmethod
    def open(base: str, width: int, max_id: int) -> Op["PackedRecords"]:
        meta = key("packed", "meta", base=base) if base else ""
        stored = yield from PackedRecords.stored_layout(base)
        if stored is None:
            raise errors.LayoutMissing(meta)
        if stored.width != width:
            raise errors.LayoutMismatch(meta, f"ids_per_shard={stored.ids_per_shard}, width={stored.width}, version=1",
                                        f"ids_per_shard={stored.ids_per_shard}, width={width}, version=1")
        return PackedRecords(base, width, max_id, stored.ids_per_shard, "dense", True)
