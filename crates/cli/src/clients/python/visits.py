"""Exact daily unique visitors in sharded intsets (manifest: patterns[visits])."""

import datetime
from collections import namedtuple
from zoneinfo import ZoneInfo

from . import scripts
from ._contract import CONSTANTS, DEFAULTS, key
from ._core import Cmd, runner
from ._errors import InvalidArgument
from .hashing import crc32

_C, _D = CONSTANTS["visits"], DEFAULTS["visits"]

Visit = namedtuple("Visit", "new count")
BatchVisits = namedtuple("BatchVisits", "count new")


def shard_of(member, shards):
    """crc32 of the member's decimal text, mod shards."""
    return crc32(str(member)) % shards


def end_of_day(day, zone):
    """The first instant of the day after `day` in `zone`, as unix seconds (a DST gap
    at midnight: the first valid local time after it; ambiguous: the earlier)."""
    midnight = datetime.datetime.combine(day + datetime.timedelta(days=1), datetime.time())
    for minute in range(24 * 60 + 1):
        local = midnight + datetime.timedelta(minutes=minute)
        aware = local.replace(tzinfo=zone, fold=0)
        back = aware.astimezone(datetime.timezone.utc).astimezone(zone)
        if back.replace(tzinfo=None) == local:
            return int(aware.timestamp())
    raise InvalidArgument("day", f"{day}: the zone has no valid local time on the next day")


class VisitCounter:
    """A daily unique-visitor counter: keys <prefix>{<name>:<YYYY-MM-DD>}:count and :<shard>."""

    def __init__(self, client, name, shards, prefix=_D["prefix"], time_zone=_D["time_zone"], grace_s=_D["grace_s"],
                 late_s=_D["late_s"]):
        if not name or "{" in name or "}" in name:
            raise InvalidArgument("counter name", "must not be empty and must not contain '{' or '}'")
        if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= _C["max_shards"]:
            raise InvalidArgument("shards", f"must be from 1 to {_C['max_shards']}, got {shards}")
        if grace_s is not None and not 0 <= grace_s <= _C["max_grace_s"]:
            raise InvalidArgument("retention", "must be whole seconds, at most 366 days")
        if late_s is not None and not 0 <= late_s <= _C["max_grace_s"]:
            raise InvalidArgument("late window", "must be whole seconds, at most 366 days")
        if late_s is not None and grace_s is not None and late_s > grace_s:
            raise InvalidArgument("late window", f"{late_s} s is longer than the retention's grace of {grace_s} s")
        self._run = runner(client)
        self.name, self.shards, self.prefix, self.grace_s, self.late_s = name, shards, prefix, grace_s, late_s
        self.zone = ZoneInfo(time_zone)

    def _vars(self, day):
        return {"prefix": self.prefix, "name": self.name, "YYYY-MM-DD": day.isoformat()}

    def counter_key(self, day):
        return key("visits", "counter", **self._vars(day))

    def shard_key(self, day, index):
        return key("visits", "shard", shard=index, **self._vars(day))

    def meta_key(self, day):
        return key("visits", "meta", **self._vars(day))

    def member_shard_key(self, day, member):
        return self.shard_key(day, shard_of(member, self.shards))

    def expire_at(self, day):
        """The scripts' expire_at of the day's keys (0: never)."""
        if self.grace_s is None:
            return 0
        return end_of_day(day, self.zone) + self.grace_s

    def accept_until(self, day):
        """The scripts' accept_until: from then on visits to the day are refused (0: as long as its keys live)."""
        if self.late_s is None:
            return 0
        return end_of_day(day, self.zone) + self.late_s

    def add(self, day, member):
        """Counts one visit: Visit(new, count)."""
        return self._run(self._add(day, member))

    def _add(self, day, member):
        new, count = yield scripts.Visits.add(
            self.counter_key(day), self.member_shard_key(day, member), self.meta_key(day), self.expire_at(day), self.accept_until(day), member, self.shards
        )
        return Visit(new == 1, max(count, 0))

    def add_batch(self, day, members):
        """Counts many visits of one day in one script call: BatchVisits(count, new per member)."""
        return self._run(self._add_batch(day, list(members)))

    def _add_batch(self, day, members):
        if not members:
            return BatchVisits((yield from self._count(day)), [])
        groups, order, place = {}, [], []
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
        offset, at, args = {}, 1, []
        for s in order:
            offset[s] = at
            at += len(groups[s])
            args.append(len(groups[s]))
            args.extend(groups[s])
        reply = yield scripts.Visits.add_batch(
            self.counter_key(day), self.meta_key(day), [self.shard_key(day, s) for s in order], self.expire_at(day), self.accept_until(day), self.shards, args
        )
        new = [False if p is None else reply[offset[p[0]] + p[1]] == 1 for p in place]
        return BatchVisits(max(reply[0], 0), new)

    def count(self, day):
        """The day's distinct count."""
        return self._run(self._count(day))

    def _count(self, day):
        n = yield Cmd("GET", self.counter_key(day))
        return max(int(n or 0), 0)

    def contains(self, day, member):
        """Whether member was counted on day (read-only script)."""
        return self._run(self._contains(day, member))

    def _contains(self, day, member):
        counted, _ = yield scripts.Visits.contains(self.counter_key(day), self.member_shard_key(day, member), member)
        return counted == 1

    def distinct_over(self, days):
        """The exact number of distinct members over several days (a client-side union per shard index)."""
        return self._run(self._distinct(sorted(set(days))))

    def _distinct(self, days):
        if len(days) == 1:
            return (yield from self._count(days[0]))
        total = 0
        for i in range(self.shards):
            sets = yield [Cmd("SMEMBERS", self.shard_key(d, i)) for d in days]
            union = set()
            for s in sets:
                union |= set(s)
            total += len(union)
        return total
