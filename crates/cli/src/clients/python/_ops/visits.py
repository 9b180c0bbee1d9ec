"""The visit counter's operations (src/visits, lua/visits)."""

from __future__ import annotations

import datetime
import time
import zlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _days, errors, records, scripts
from .._contract import key
from .._driver import ANY, Cmd, Op, Request, each

MAX_GRACE_S = 366 * 86400
UNION_SETS = 512


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def shard_of(member: int, shards: int) -> int:
    """crc32 of the member's decimal text, mod shards."""
    return zlib.crc32(str(member).encode()) % shards


class VisitCounter:
    def __init__(self, name: str, shards: int, time_zone: str, prefix: str, retention_s: Optional[int],
                 late_window_s: Optional[int]) -> None:
        if retention_s is not None and retention_s > MAX_GRACE_S:
            raise _bad("retention", "must be whole seconds, at most 366 days")
        if late_window_s is not None:
            if late_window_s > MAX_GRACE_S:
                raise _bad("late window", "must be whole seconds, at most 366 days")
            if retention_s is not None and late_window_s > retention_s:
                raise _bad("late window", f"{late_window_s} s is longer than the retention's grace of {retention_s} s: "
                           "late visits would find their day's keys gone")
        self.name, self.shards, self.prefix = name, shards, prefix
        self.time_zone, self.zone = time_zone, _days.zone(time_zone)
        self.retention_s, self.late_window_s = retention_s, late_window_s

    def __repr__(self) -> str:
        return f"name={self.name!r}, shards={self.shards}, time_zone={self.time_zone!r}"

    def _tag_vars(self, day: datetime.date) -> Dict[str, object]:
        return {"prefix": self.prefix, "name": self.name, "YYYY-MM-DD": day.isoformat()}

    def counter_key(self, day: datetime.date) -> str:
        return key("visits", "counter", **self._tag_vars(day))

    def meta_key(self, day: datetime.date) -> str:
        return key("visits", "meta", **self._tag_vars(day))

    def shard_key(self, day: datetime.date, index: int) -> str:
        return key("visits", "shard", shard=index, **self._tag_vars(day))

    def _expire_at(self, day: datetime.date) -> int:
        return 0 if self.retention_s is None else _days.end_of_day(day, self.zone) + self.retention_s

    def _accept_until(self, day: datetime.date) -> int:
        return 0 if self.late_window_s is None else _days.end_of_day(day, self.zone) + self.late_window_s

    def _add_call(self, day: datetime.date, member: int) -> Request:
        return scripts.Visits.add(self.counter_key(day), self.shard_key(day, shard_of(member, self.shards)),
                                  self.meta_key(day), self._expire_at(day), self._accept_until(day), member, self.shards)

    def add(self, day: datetime.date, member: int) -> Op[records.Visit]:
        new, count = yield self._add_call(day, member)
        return records.Visit(int(new) == 1, max(int(count), 0))

    def add_now(self, member: int) -> Op[records.Visit]:
        today = datetime.datetime.now(self.zone).date()
        return (yield from self.add(today, member))

    def add_at(self, at_ms: int, member: int) -> Op[records.Visit]:
        return (yield from self.add(self.day_of(at_ms), member))

    def day_of(self, at_ms: int) -> datetime.date:
        return datetime.datetime.fromtimestamp(at_ms // 1000, self.zone).date()

    def member_from_string_id(self, id: str) -> int:
        c = zlib.crc32(id.encode())
        return c - (1 << 32) if c >= 1 << 31 else c

    def add_pipelined(self, day: datetime.date, members: Sequence[int]) -> Op[List[records.Visit]]:
        if not members:
            return []
        replies = each((yield [self._add_call(day, m) for m in members]))
        return [records.Visit(int(r[0]) == 1, max(int(r[1]), 0)) for r in replies]

    def add_batch(self, day: datetime.date, members: Sequence[int]) -> Op[records.BatchVisits]:
        expire, accept = self._expire_at(day), self._accept_until(day)
        if not members:
            return records.BatchVisits((yield from self.count(day)), [])
        groups: Dict[int, List[int]] = {}
        order: List[int] = []
        place: List[Optional[Tuple[int, int]]] = []
        seen = set()
        for m in members:
            if m in seen:
                place.append(None)
                continue
            seen.add(m)
            s = shard_of(m, self.shards)
            if s not in groups:
                groups[s] = []
                order.append(s)
            groups[s].append(m)
            place.append((s, len(groups[s]) - 1))
        offset: Dict[int, int] = {}
        at, args = 1, []
        for s in order:
            offset[s] = at
            at += len(groups[s])
            args.append(len(groups[s]))
            args.extend(groups[s])
        reply = yield scripts.Visits.add_batch(self.counter_key(day), self.meta_key(day),
                                               [self.shard_key(day, s) for s in order], expire, accept, self.shards, args)
        new: List[Optional[bool]] = [False if p is None else int(reply[offset[p[0]] + p[1]]) == 1 for p in place]
        return records.BatchVisits(max(int(reply[0]), 0), new)

    def count(self, day: datetime.date) -> Op[int]:
        n = yield Cmd("GET", self.counter_key(day))
        return max(int(n or 0), 0)

    def final_count(self, day: datetime.date) -> Op[int]:
        expire = None if self.retention_s is None else _days.end_of_day(day, self.zone) + self.retention_s
        accept = None if self.late_window_s is None else _days.end_of_day(day, self.zone) + self.late_window_s
        k = self.counter_key(day)
        now_reply, count = each((yield [Cmd("TIME", node=ANY), Cmd("GET", k)]))
        now = int(now_reply[0])

        def when(at: int) -> str:
            return datetime.datetime.fromtimestamp(at, datetime.timezone.utc).isoformat()

        if accept is None:
            raise errors.DayOpen(f"{day} accepts visits as long as its keys live (the counter has no late window)")
        if now < accept:
            raise errors.DayOpen(f"{day} accepts visits until {when(accept)} (its end plus the late window)")
        if expire is not None and now >= expire:
            raise errors.DayExpired(f"{day}'s keys expired at {when(expire)} (its end plus the retention's grace)")
        return max(int(count or 0), 0)

    def contains(self, day: datetime.date, member: int) -> Op[bool]:
        reply = yield scripts.Visits.contains(self.counter_key(day), self.shard_key(day, shard_of(member, self.shards)), member)
        return bool(reply) and int(reply[0]) == 1

    def shard_sizes(self, day: datetime.date) -> Op[List[int]]:
        return [int(n) for n in each((yield [Cmd("SCARD", self.shard_key(day, i)) for i in range(self.shards)]))]

    def distinct_over(self, days: Sequence[datetime.date]) -> Op[int]:
        distinct = sorted(set(days))
        if not distinct:
            return 0
        if len(distinct) == 1:
            return (yield from self.count(distinct[0]))
        per = max(UNION_SETS // len(distinct), 1)
        total = 0
        for first in range(0, self.shards, per):
            idx = range(first, min(first + per, self.shards))
            sets = each((yield [Cmd("SMEMBERS", self.shard_key(d, i)) for i in idx for d in distinct]))
            for j in range(len(idx)):
                union = set()
                for s in sets[j * len(distinct):(j + 1) * len(distinct)]:
                    union |= set(s)
                total += len(union)
        return total

    def distinct_between(self, from_: datetime.date, to: datetime.date) -> Op[int]:
        return (yield from self.distinct_over(_days.days(from_, to)))

    def stored_shards(self, day: datetime.date) -> Op[Optional[int]]:
        return (yield from self.stored_shards_between(day, day))

    def stored_shards_between(self, from_: datetime.date, to: datetime.date) -> Op[Optional[int]]:
        keys = [self.meta_key(d) for d in _days.days(from_, to)]
        found: Optional[Tuple[str, int]] = None
        for k, n in zip(keys, each((yield [Cmd("HGET", k, "shards") for k in keys]))):
            if n is None:
                continue
            n = int(n)
            if found is not None and found[1] != n:
                raise errors.LayoutMismatch(k, f"shards={n}", f"shards={found[1]} (stored at {found[0]})")
            found = found or (k, n)
        return None if found is None else found[1]

    @staticmethod
    def planned(name: str, expected_daily_uniques: int, time_zone: str) -> Op[Tuple["VisitCounter", records.ShardPlan]]:
        if expected_daily_uniques == 0:
            raise _bad("expected daily uniques", "must be at least 1")
        try:
            reply = yield Cmd("CONFIG", "GET", "set-max-intset-entries", node=ANY)
            pairs = list(reply.items()) if isinstance(reply, dict) else list(zip(reply[::2], reply[1::2]))
            limit, source = (int(pairs[0][1]), "server") if pairs else (512, "default_because_unreported")
            source_: Any = source
        except errors.RedisPatternsError:
            limit, source_ = 512, "default_because_denied"
        shards = plan_shards(expected_daily_uniques, limit)
        return VisitCounter(name, shards, time_zone, "visits:", 172800, 300), records.ShardPlan(shards, limit, source_)


def plan_shards(expected: int, max_intset_entries: int) -> int:
    """src/visits/shards.rs plan_shards: the mean m per shard with m + 4 sqrt(m) <= the limit."""
    import math

    if max_intset_entries < 64:
        raise _bad("max intset entries", f"{max_intset_entries} is too small to plan shards (at least 64)")
    root = (-4.0 + math.sqrt(16.0 + 4.0 * max_intset_entries)) / 2.0
    mean = max(math.floor(root * root), 1.0)
    shards = math.ceil(expected / mean)
    if shards > 1 << 20:
        raise _bad("expected daily uniques", f"{expected} needs more than {1 << 20} shards")
    return max(shards, 1)
