"""The sharded hash's operations (src/sharded_hash, lua/sharded_hash)."""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple

from .. import errors, records, scripts
from .._contract import key
from .._driver import ANY, Cmd, Op, Request, each
from . import layout

_ID = re.compile(rb"^(0|[1-9][0-9]*)$")
LAYOUT_VERSION = 1


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def request_key(k: str, request_id: str) -> str:
    """The key remembering one call with a request id, in k's slot (manifest: request_key)."""
    if not 1 <= len(request_id.encode()) <= 200:
        raise _bad("request id", "must be 1 to 200 bytes")
    opened = k.find("{")
    closed = k.find("}", opened + 1) if opened >= 0 else -1
    if closed > opened + 1:
        return f"{k}:req:{request_id}"
    if "}" in k:
        raise _bad("key", f"{k!r} has no hash tag but contains '}}'")
    return "{" + k + "}:req:" + request_id


def no_request_key(k: str) -> str:
    opened = k.find("{")
    closed = k.find("}", opened + 1) if opened >= 0 else -1
    return f"{k}:req" if closed > opened + 1 else "{" + k + "}:req"


MAX_REJECTIONS = 100
RejectReason = Literal["bad_field", "value_too_long", "shard_full"]


class _Tally:
    """An import's counts as it goes (records are frozen)."""

    def __init__(self) -> None:
        self.items = self.inserted = self.present = self.rejected = 0
        self.rejections: List[records.Rejection] = []

    def reject(self, position: int, reason: RejectReason) -> None:
        self.rejected += 1
        if len(self.rejections) < MAX_REJECTIONS:
            self.rejections.append(records.Rejection(position, reason))

    def report(self) -> records.ImportReport:
        return records.ImportReport(self.items, self.inserted, self.present, 0, self.rejected, self.rejections)


class ShardedHash:
    def __init__(self, base: str, shards: int, fields_per_shard: int, max_id: int, separator: str, strict: bool,
                 entries_limit: int, value_limit: int, record_layout: bool) -> None:
        if not base:
            raise _bad("base", "must not be empty")
        if not separator:
            raise _bad("separator", "must not be empty")
        if "{" in separator or "}" in separator:
            raise _bad("separator", "must not contain '{' or '}' (shard keys carry no hash tag)")
        if fields_per_shard == 0 and shards == 0:
            raise _bad("shard count", "must be at least 1")
        if fields_per_shard == 0 and shards > 2 ** 32 - 1:
            raise _bad("shard count", "must be at most 4294967295")
        self.base, self.separator, self.strict = base, separator, strict
        self.by_id, self.fields_per_shard, self.max_id = fields_per_shard > 0, fields_per_shard, max_id
        self.shards = max_id // fields_per_shard + 1 if self.by_id else shards
        self.entries, self.value = entries_limit, value_limit
        self.meta_key = key("sharded_hash", "meta", base=base)
        self._layout = layout.LayoutClaim(self.meta_key, self.layout_fields, record_layout)

    def __repr__(self) -> str:
        return f"base={self.base!r}, shards={self.shards}"

    def layout_fields(self) -> Dict[str, str]:
        out = {"pattern": "sharded_hash", "version": str(LAYOUT_VERSION), "separator": ":"}
        if self.by_id:
            out.update(scheme="by_id", fields_per_shard=str(self.fields_per_shard), max_id=str(self.max_id))
        else:
            out.update(scheme="crc32", shards=str(self.shards))
        return out

    def key_of_shard(self, shard: int) -> str:
        return key("sharded_hash", "shard", base=self.base, separator=self.separator, shard=shard)

    def shard_of(self, field: bytes) -> int:
        if not self.by_id:
            import zlib

            return zlib.crc32(field) % self.shards
        if not _ID.match(field):
            raise _bad("field", f"`{field.decode(errors='replace')}` is not a decimal integer id")
        n = int(field)
        if n > self.max_id:
            raise errors.IdOutOfRange(n, self.max_id)
        return n // self.fields_per_shard

    def shard_key(self, field: bytes) -> str:
        return self.key_of_shard(self.shard_of(field))

    def _check_pair(self, field: bytes, value: bytes) -> None:
        if self.strict:
            for what, b in (("field", field), ("value", value)):
                if len(b) > self.value:
                    raise errors.ListpackValueTooLong(what, len(b), self.value)

    def claim_layout(self) -> Op[None]:
        return self._layout.claim()

    def _write(self, pairs: Sequence[Tuple[bytes, bytes]], only_absent: bool) -> Op[int]:
        by_shard: Dict[int, List[int]] = {}
        for i, (f, v) in enumerate(pairs):
            shard = self.shard_of(f)
            self._check_pair(f, v)
            by_shard.setdefault(shard, []).append(i)
        yield from self._layout.before_write()
        batch: List[Request] = []
        for shard in sorted(by_shard):
            k, idx = self.key_of_shard(shard), by_shard[shard]
            if self.strict:
                items = [x for i in idx for x in pairs[i]]
                batch.append(scripts.ShardedHash.put(k, only_absent, min(self.entries, 2 ** 63 - 1), items))
            elif only_absent:
                batch.extend(Cmd("HSETNX", k, *pairs[i]) for i in idx)
            else:
                batch.append(Cmd("HSET", k, *[x for i in idx for x in pairs[i]]))
        if not batch:
            return 0
        return sum(int(r) for r in each((yield batch)))

    def set(self, field: bytes, value: bytes) -> Op[Optional[bool]]:
        return (yield from self._write([(field, value)], False)) == 1

    def set_if_absent(self, field: bytes, value: bytes) -> Op[Optional[bool]]:
        return (yield from self._write([(field, value)], True)) == 1

    def set_many(self, pairs: Sequence[Tuple[bytes, bytes]]) -> Op[Optional[int]]:
        return (yield from self._write(pairs, False))

    def set_if_absent_many(self, pairs: Sequence[Tuple[bytes, bytes]]) -> Op[Optional[int]]:
        return (yield from self._write(pairs, True))

    def get(self, field: bytes) -> Op[Optional[bytes]]:
        got = yield Cmd("HGET", self.shard_key(field), field)
        return None if got is None else bytes(got)

    def get_many(self, fields: Sequence[bytes]) -> Op[List[Optional[bytes]]]:
        by_shard: Dict[int, List[int]] = {}
        for i, f in enumerate(fields):
            by_shard.setdefault(self.shard_of(f), []).append(i)
        order = sorted(by_shard)
        out: List[Optional[bytes]] = [None] * len(fields)
        if not order:
            return out
        replies = each((yield [Cmd("HMGET", self.key_of_shard(s), *[fields[i] for i in by_shard[s]]) for s in order]))
        for s, values in zip(order, replies):
            for i, v in zip(by_shard[s], values):
                out[i] = None if v is None else bytes(v)
        return out

    def delete(self, field: bytes) -> Op[Optional[bool]]:
        return int((yield Cmd("HDEL", self.shard_key(field), field))) == 1

    def exists(self, field: bytes) -> Op[bool]:
        return int((yield Cmd("HEXISTS", self.shard_key(field), field))) == 1

    def _incr(self, field: bytes, delta: int, request: Optional[Tuple[str, int]]) -> Op[int]:
        k = self.shard_key(field)
        self._check_pair(field, b"")
        yield from self._layout.before_write()
        if not self.strict and request is None:
            return int((yield Cmd("HINCRBY", k, field, delta)))
        rk, ttl = (request_key(k, request[0]), request[1]) if request else (no_request_key(k), 0)
        entries = min(self.entries, 2 ** 63 - 1) if self.strict else 0
        return int((yield scripts.ShardedHash.incr(k, rk, field, delta, entries, ttl)))

    def incr(self, field: bytes, delta: int) -> Op[int]:
        return (yield from self._incr(field, delta, None))

    def incr_once(self, field: bytes, delta: int, request_id: str, request_ttl_ms: int) -> Op[int]:
        return (yield from self._incr(field, delta, (request_id, request_ttl_ms)))

    def len(self) -> Op[int]:
        return sum(int(n) for n in each((yield [Cmd("HLEN", self.key_of_shard(s)) for s in range(self.shards)])))

    def is_empty(self) -> Op[bool]:
        return (yield from self.len()) == 0

    def inspect(self, sample: int) -> Op[records.Health]:
        if sample == 0:
            raise _bad("sample", "must be at least 1")
        picks = list(range(self.shards)) if sample >= self.shards else [i * self.shards // sample for i in range(sample)]
        batch: List[Request] = []
        for s in picks:
            batch += [Cmd("OBJECT", "ENCODING", self.key_of_shard(s)), Cmd("HLEN", self.key_of_shard(s))]
        replies = yield batch
        missing = listpack = converted = max_len = total = 0
        converted_keys: List[str] = []
        for i, s in enumerate(picks):
            enc, n = replies[2 * i], replies[2 * i + 1]
            if isinstance(n, BaseException):
                raise n
            n = int(n)
            max_len, total = max(max_len, n), total + n
            if enc is None or (isinstance(enc, BaseException) and "no such key" in str(enc)):
                missing += 1
            elif isinstance(enc, BaseException):
                raise enc
            elif bytes(enc) in (b"listpack", b"ziplist"):
                listpack += 1
            else:
                converted += 1
                if len(converted_keys) < 100:
                    converted_keys.append(self.key_of_shard(s))
        return records.Health(len(picks), missing, listpack, converted, converted_keys, max_len, total)

    def _stage(self, field: bytes, value: bytes) -> Optional[RejectReason]:
        """Why an import rejects an item (None: it goes into the batch)."""
        try:
            self.shard_of(field)
        except errors.RedisPatternsError:
            return "bad_field"
        try:
            self._check_pair(field, value)
        except errors.ListpackValueTooLong:
            return "value_too_long"
        return None

    def _import_batch(self, part: List[Tuple[int, bytes, bytes]], report: _Tally) -> Op[None]:
        """One batch of an import: one write per shard (strict) or HSETNX per item; a full shard rejects its items."""
        by_shard: Dict[int, List[Tuple[int, bytes, bytes]]] = {}
        for item in part:
            by_shard.setdefault(self.shard_of(item[1]), []).append(item)
        calls: List[Request] = []
        covers: List[List[int]] = []
        for shard in sorted(by_shard):
            k, group = self.key_of_shard(shard), by_shard[shard]
            if self.strict:
                flat = [x for _, f, v in group for x in (f, v)]
                calls.append(scripts.ShardedHash.put(k, True, min(self.entries, 2 ** 63 - 1), flat))
                covers.append([p for p, _, _ in group])
            else:
                calls.extend(Cmd("HSETNX", k, f, v) for _, f, v in group)
                covers.extend([p] for p, _, _ in group)
        for positions, reply in zip(covers, (yield calls)):
            if isinstance(reply, errors.ShardFull):
                for p in positions:
                    report.reject(p, "shard_full")
            elif isinstance(reply, BaseException):
                raise reply
            else:
                n = max(int(reply), 0)
                report.inserted += n
                report.present += len(positions) - n

    def import_items(self, items: Sequence[Tuple[bytes, bytes]], batch: int) -> Op[records.ImportReport]:
        if batch == 0:
            raise _bad("batch", "must be at least 1")
        report = _Tally()
        yield from self._layout.before_write()
        for at in range(0, len(items), batch):
            good: List[Tuple[int, bytes, bytes]] = []
            for position, (f, v) in enumerate(items[at:at + batch], start=at + 1):
                report.items += 1
                why = self._stage(f, v)
                if why is None:
                    good.append((position, f, v))
                else:
                    report.reject(position, why)
            if good:
                yield from self._import_batch(good, report)
        return report.report()

    @staticmethod
    def planned(base: str, expected: int) -> Op[Tuple["ShardedHash", records.HashPlan]]:
        if not base:
            raise _bad("base", "must not be empty")
        (entries, value), source = yield from _limits()
        shards = plan_shards(expected, entries)
        h = ShardedHash(base, shards, 0, 0, ":", True, entries, value, False)
        bound = shards * binomial_tail(max(expected, 1), 1.0 / shards, entries)
        return h, records.HashPlan(shards, expected, entries, value, source, expected / shards, bound)

    @staticmethod
    def listpack_limits() -> Op[Optional[records.ListpackLimits]]:
        (entries, value), source = yield from _limits()
        return records.ListpackLimits(entries, value) if source == "server" else None

    @staticmethod
    def open(base: str) -> Op["ShardedHash"]:
        meta, stored = yield from layout.Layouts.existing("sharded_hash", base)
        if stored.get("pattern") != "sharded_hash" or stored.get("version") != "1" or stored.get("separator") != ":":
            raise errors.LayoutMismatch(meta, str(stored), "a sharded_hash layout of version 1")
        if stored.get("scheme") == "crc32":
            return ShardedHash(base, int(stored["shards"]), 0, 0, ":", True, 512, 64, True)
        if stored.get("scheme") == "by_id":
            return ShardedHash(base, 0, int(stored["fields_per_shard"]), int(stored["max_id"]), ":", True, 512, 64, True)
        raise errors.LayoutMismatch(meta, str(stored), "a sharded_hash layout of version 1")


def _limits() -> Op[Tuple[Tuple[int, int], Any]]:
    """The server's hash-max-listpack-entries/-value (CONFIG GET), or the defaults."""
    names = ("hash-max-listpack-entries", "hash-max-listpack-value")
    try:
        got = yield [Cmd("CONFIG", "GET", n, node=ANY) for n in names]
    except errors.RedisPatternsError:
        return (512, 64), "default_because_denied"
    vals: List[int] = []
    for reply in got:
        if isinstance(reply, BaseException):
            return (512, 64), "default_because_denied"
        pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
        vals.extend(int(v) for _, v in pairs)
    if len(vals) != 2:
        return (512, 64), "default_because_unreported"
    return (vals[0], vals[1]), "server"


def binomial_tail(n: int, p: float, limit: int) -> float:
    """P(X > limit) for X ~ Binomial(n, p), exactly as src/sharded_hash/plan.rs sums it."""
    if limit >= n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    k0 = limit + 1
    ln_c = 0.0
    for i in range(k0):
        ln_c += math.log((n - i) / (i + 1.0))
    term = math.exp(ln_c + k0 * math.log(p) + (n - k0) * math.log1p(-p))
    odds = p / (1.0 - p)
    total, k = 0.0, k0
    while True:
        total += term
        if k >= n:
            break
        ratio = (n - k) / (k + 1.0) * odds
        term *= ratio
        k += 1
        if ratio < 1.0 and (term == 0.0 or term < total * 1e-17):
            break
    return min(total, 1.0)


def plan_shards(expected: int, entries: int, target: float = 1e-9) -> int:
    """The smallest shard count for which shards * P(Bin(expected, 1/shards) > entries) <= target
    (src/sharded_hash/plan.rs: the same search, so every client plans the same count)."""
    n = max(expected, 1)

    def bound(s: int) -> float:
        return s * binomial_tail(n, 1.0 / s, entries)

    lo = max(-(-n // entries), 1)
    if bound(lo) > target:
        hi = lo * 2
        while bound(hi) > target:
            if hi >= 2 ** 32 - 1:
                raise _bad("expected", f"{expected} entries cannot be kept under {entries} per shard")
            lo, hi = hi, min(hi * 2, 2 ** 32 - 1)
        while hi - lo > 1:
            mid = lo + (hi - lo) // 2
            if bound(mid) <= target:
                hi = mid
            else:
                lo = mid
        lo = hi
    return lo
