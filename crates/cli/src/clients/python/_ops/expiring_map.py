"""The expiring map's operations (src/expiring_map, lua/expiring_map) on its two paths: portable (each
value carries its expiry in its first 6 bytes; the scripts read the server's clock and never return an
expired entry) and native (the server's per-field TTL: HPEXPIRE, HPTTL, HPERSIST, and HSETEX in the write's
script)."""

from __future__ import annotations

import zlib
from typing import Dict, List, Optional, Sequence, Tuple

from .. import errors, records, scripts
from .._contract import CONSTANTS, key
from .._driver import Cmd, Op, Request, each
from . import layout, sharded_hash

#: The bytes the portable path adds before each value: its expiry.
EXPIRY_BYTES = 6
#: The longest time to live or max-idle time, in milliseconds (the scripts' bound).
MAX_TTL_MS = 999_999_999_999_999
#: The version of the layout fields written in the meta key.
LAYOUT_VERSION = 1
_C = CONSTANTS["expiring_map"]
PATHS = ("portable", "native")


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def _millis(name: str, ms: Optional[int]) -> int:
    """A duration as the scripts take it (0 for none), refused outside 1 ..= MAX_TTL_MS."""
    if ms is None:
        return 0
    if not 1 <= ms <= MAX_TTL_MS:
        raise _bad(name, f"must be from 1 ms to {MAX_TTL_MS} ms")
    return ms


#: What this client can open.
_READABLE_LAYOUT = "an expiring_map layout of version 1 on the portable or the native path"


def _unknown_command(reply: object) -> bool:
    return isinstance(reply, BaseException) and "unknown command" in str(reply).lower()


class ExpiringMap:
    def __init__(self, base: str, shards: int, cap: int, max_idle_ms: Optional[int], entries_limit: int,
                 value_limit: int, record_layout: bool, path: str = "portable") -> None:
        if not base:
            raise _bad("base", "must not be empty")
        if shards == 0:
            raise _bad("shard count", "must be at least 1")
        if shards > 2 ** 32 - 1:
            raise _bad("shard count", "must be at most 4294967295")
        if path not in PATHS:
            raise _bad("path", "must be portable or native")
        if value_limit <= EXPIRY_BYTES and path == "portable":
            raise _bad("limits", f"a value limit of {value_limit} leaves no room for the expiry")
        self.base, self.shards, self.cap = base, shards, cap
        self.idle = _millis("max_idle", max_idle_ms)
        self.entries_limit, self.value = entries_limit, value_limit
        self.meta_key = key("expiring_map", "meta", base=base)
        self._layout = layout.LayoutClaim(self.meta_key, self.layout_fields, record_layout)
        self.path, self.native = path, path == "native"
        #: Whether the server was found to have the native path's commands (asked once).
        self.probed = False

    def __repr__(self) -> str:
        return f"base={self.base!r}, shards={self.shards}"

    def layout_fields(self) -> Dict[str, str]:
        return {"pattern": "expiring_map", "version": str(LAYOUT_VERSION), "scheme": "crc32", "separator": ":",
                "shards": str(self.shards), "path": self.path}

    def claim_layout(self) -> Op[None]:
        return self._layout.claim()

    @staticmethod
    def open(base: str) -> Op["ExpiringMap"]:
        meta, stored = yield from layout.Layouts.existing("expiring_map", base)
        want = {"pattern": "expiring_map", "version": "1", "scheme": "crc32", "separator": ":"}
        shards, path = stored.get("shards", ""), stored.get("path", "")
        if (any(stored.get(k) != v for k, v in want.items()) or not shards.isdigit() or int(shards) == 0
                or path not in PATHS):
            raise errors.LayoutMismatch(meta, layout._describe(stored), _READABLE_LAYOUT)
        return ExpiringMap(base, int(shards), 0, None, 512, 64, True, path)

    def _on_path(self) -> Op[None]:
        """On the native path, the first call asks whether the server has per-field TTLs (native_probe:
        read-only commands, one batch); without them InvalidArgument (path), nothing else sent."""
        if not self.native or self.probed:
            return
        shard = self.key_of_shard(0)
        # Routed by the shard (key=): on a cluster the batch goes to its node as one pipeline, whose
        # server answers an unknown command itself (redis-py's cluster pipeline would refuse to route
        # a command the server's COMMAND table lacks, failing the whole batch).
        replies = yield [Cmd(c, shard, "FIELDS", 1, "probe", key=shard) for c in _C["native_probe"]]
        if any(_unknown_command(r) for r in replies):
            raise _bad("path", _C["native_refusal"])
        self.probed = True

    def key_of_shard(self, shard: int) -> str:
        return key("expiring_map", "shard", base=self.base, shard=shard)

    def shard_of(self, field: bytes) -> int:
        return zlib.crc32(field) % self.shards

    def shard_key(self, field: bytes) -> str:
        return self.key_of_shard(self.shard_of(field))

    def _check_pair(self, field: bytes, value: bytes) -> None:
        if len(field) > self.value:
            raise errors.ListpackValueTooLong("field", len(field), self.value)
        extra, what = (0, "value") if self.native else (EXPIRY_BYTES, "value with its expiry")
        if len(value) + extra > self.value:
            raise errors.ListpackValueTooLong(what, len(value) + extra, self.value)

    def _by_shard(self, fields: Sequence[bytes]) -> Dict[int, List[int]]:
        by: Dict[int, List[int]] = {}
        for i, f in enumerate(fields):
            by.setdefault(self.shard_of(f), []).append(i)
        return dict(sorted(by.items()))

    def _write(self, pairs: Sequence[Tuple[bytes, bytes]], ttl_ms: Optional[int],
               only_absent: bool) -> Op[records.PutReport]:
        ttl = _millis("ttl", ttl_ms)
        for f, v in pairs:
            self._check_pair(f, v)
        if not pairs:
            raise _bad("pairs", "must not be empty")
        yield from self._on_path()
        yield from self._layout.before_write()
        batch: List[Request] = []
        # Both scripts take the same arguments and answer new + evicted * 2**32.
        put = scripts.ExpiringMap.put_native if self.native else scripts.ExpiringMap.put
        for shard, idx in self._by_shard([f for f, _ in pairs]).items():
            items = [x for i in idx for x in pairs[i]]
            limit = min(self.entries_limit, MAX_TTL_MS)
            batch.append(put(self.key_of_shard(shard), only_absent, ttl, limit, min(self.cap, MAX_TTL_MS), items))
        new = evicted = 0
        for reply in each((yield batch)):
            r = max(int(reply), 0)
            new, evicted = new + (r & 0xFFFFFFFF), evicted + (r >> 32)
        return records.PutReport(new, evicted)

    def put(self, field: bytes, value: bytes, ttl_ms: Optional[int]) -> Op[Optional[bool]]:
        return (yield from self._write([(field, value)], ttl_ms, False)).new == 1

    def put_if_absent(self, field: bytes, value: bytes, ttl_ms: Optional[int]) -> Op[Optional[bool]]:
        return (yield from self._write([(field, value)], ttl_ms, True)).new == 1

    def put_many(self, pairs: Sequence[Tuple[bytes, bytes]], ttl_ms: Optional[int]) -> Op[records.PutReport]:
        return (yield from self._write(pairs, ttl_ms, False))

    def put_if_absent_many(self, pairs: Sequence[Tuple[bytes, bytes]],
                           ttl_ms: Optional[int]) -> Op[records.PutReport]:
        return (yield from self._write(pairs, ttl_ms, True))

    def get(self, field: bytes) -> Op[Optional[bytes]]:
        return (yield from self.get_many([field]))[0]

    def get_many(self, fields: Sequence[bytes]) -> Op[List[Optional[bytes]]]:
        out: List[Optional[bytes]] = [None] * len(fields)
        by = self._by_shard(fields)
        if not by:
            return out
        yield from self._on_path()
        batch: List[Request] = []
        for s, idx in by.items():
            k, part = self.key_of_shard(s), [fields[i] for i in idx]
            if not self.native:
                batch.append(scripts.ExpiringMap.get(k, self.idle, part))
                continue
            # HMGET never returns an expired field; max-idle: HPEXPIRE ... GT keeps a later expiry or none.
            batch.append(Cmd("HMGET", k, *part))
            if self.idle:
                batch.append(Cmd("HPEXPIRE", k, self.idle, "GT", "FIELDS", len(part), *part))
        replies = iter(each((yield batch)))
        for idx in by.values():
            values = next(replies)
            if self.native and self.idle:
                next(replies)
            for i, v in zip(idx, values):
                out[i] = None if v is None else bytes(v)
        return out

    def remove(self, field: bytes) -> Op[Optional[bool]]:
        yield from self._on_path()
        k = self.shard_key(field)
        call = Cmd("HDEL", k, field) if self.native else scripts.ExpiringMap.remove(k, [field])
        return int((yield call)) == 1

    def ttl_of(self, field: bytes) -> Op[int]:
        yield from self._on_path()
        k = self.shard_key(field)
        if self.native:
            return int((yield Cmd("HPTTL", k, "FIELDS", 1, field))[0])
        return int((yield scripts.ExpiringMap.ttl(k, field)))

    def _expiry_call(self, field: bytes, ttl: int) -> Op[int]:
        """expire.lua, or HPEXPIRE / HPERSIST (ttl 0): 1 set, -1 none to remove, -2 no live entry."""
        yield from self._on_path()
        k = self.shard_key(field)
        if not self.native:
            return int((yield scripts.ExpiringMap.expire(k, field, ttl)))
        cmd = Cmd("HPEXPIRE", k, ttl, "FIELDS", 1, field) if ttl else Cmd("HPERSIST", k, "FIELDS", 1, field)
        return int((yield cmd)[0])

    def persist(self, field: bytes) -> Op[Optional[bool]]:
        return {1: True, -1: False}.get((yield from self._expiry_call(field, 0)))

    def expire(self, field: bytes, ttl_ms: int) -> Op[bool]:
        return (yield from self._expiry_call(field, _millis("ttl", ttl_ms))) == 1

    def _as_hash(self) -> sharded_hash.ShardedHash:
        return sharded_hash.ShardedHash(self.base, self.shards, 0, 0, ":", False, self.entries_limit, self.value, False)

    def len(self) -> Op[int]:
        return (yield from self._as_hash().len())

    def inspect(self, sample: int) -> Op[records.Health]:
        return (yield from self._as_hash().inspect(sample))

    def _range(self, start: int, count: int) -> Tuple[range, Optional[int]]:
        if count == 0:
            raise _bad("count", "must be at least 1")
        if start >= self.shards:
            raise _bad("from", f"must be a shard below {self.shards}")
        end = min(start + count, self.shards)
        return range(start, end), (end if end < self.shards else None)

    def sweep(self, from_shard: int, count: int) -> Op[records.SweepReport]:
        shards, next_ = self._range(from_shard, count)
        yield from self._on_path()
        removed = live = 0
        if self.native:
            # The server removes expired fields itself: count the live ones.
            live = sum(len(k) for k in each((yield [Cmd("HKEYS", self.key_of_shard(s)) for s in shards])))
            return records.SweepReport(len(shards), 0, live, next_)
        for reply in each((yield [scripts.ExpiringMap.sweep(self.key_of_shard(s)) for s in shards])):
            removed, live = removed + int(reply[0]), live + int(reply[1])
        return records.SweepReport(len(shards), removed, live, next_)

    def entries(self, from_shard: int, count: int) -> Op[records.EntriesPage]:
        shards, next_ = self._range(from_shard, count)
        yield from self._on_path()
        if self.native:
            return (yield from self._native_entries(shards, next_))
        out: List[records.MapEntry] = []
        for flat in each((yield [scripts.ExpiringMap.entries(self.key_of_shard(s)) for s in shards])):
            for i in range(0, len(flat) - 2, 3):
                at = int(flat[i + 2])
                out.append(records.MapEntry(bytes(flat[i]), bytes(flat[i + 1]), at if at > 0 else None))
        return records.EntriesPage(out, next_)

    def _native_entries(self, shards: range, next_: Optional[int]) -> Op[records.EntriesPage]:
        """HGETALL of each shard, then HPEXPIRETIME of the fields read (one gone since, -2, is left out)."""
        keys = [self.key_of_shard(s) for s in shards]
        pages = [_pairs(r) for r in each((yield [Cmd("HGETALL", k) for k in keys]))]
        asked = [(k, p) for k, p in zip(keys, pages) if p]
        out: List[records.MapEntry] = []
        if not asked:
            return records.EntriesPage(out, next_)
        batch: List[Request] = [Cmd("HPEXPIRETIME", k, "FIELDS", len(p), *[f for f, _ in p]) for k, p in asked]
        for (_, p), ats in zip(asked, each((yield batch))):
            for (f, v), at in zip(p, ats):
                if int(at) != -2:
                    out.append(records.MapEntry(f, v, int(at) if int(at) > 0 else None))
        return records.EntriesPage(out, next_)


def _pairs(reply: object) -> List[Tuple[bytes, bytes]]:
    """An HGETALL reply (redis-py may give a dict, or a flat list) as (field, value) pairs in order."""
    if isinstance(reply, dict):
        return [(bytes(f), bytes(v)) for f, v in reply.items()]
    flat = list(reply)  # type: ignore[call-overload]
    return [(bytes(flat[i]), bytes(flat[i + 1])) for i in range(0, len(flat) - 1, 2)]
