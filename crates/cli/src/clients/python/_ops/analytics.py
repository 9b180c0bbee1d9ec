"""Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC."""

from __future__ import annotations

import datetime
import os
import re
from typing import Any, List, Optional

from .. import _expr, errors, records, scripts
from .._contract import key
from .._driver import ENV, Cmd, Op, each, slot
from .signin import MAX_OFFSET, check_settings
MAX_PAGE = 100000
MAX_RANGE = 1000
ORDER = ["hour", "day", "week", "month", "year"]


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def labels(at: datetime.datetime, granularities: List[str]) -> List[str]:
    """The period labels of the UTC instant `at`, one per granularity, finest first."""
    iso = at.isocalendar()
    by = {
        "hour": at.strftime("H:%Y-%m-%dT%H"),
        "day": at.strftime("D:%Y-%m-%d"),
        "week": f"W:{iso[0]:04d}-W{iso[1]:02d}",
        "month": at.strftime("M:%Y-%m"),
        "year": f"Y:{at.year:04d}",
    }
    return [by[g] for g in granularities]


def offset(label: str, n: int) -> str:
    """The label of the period n periods after the one labelled label (hour, day, ISO week, month or year)."""
    if not _expr.LABEL.match(label) or label == "U":
        raise _bad("first", f"`{label}` is not a period label (H:, D:, W:, M: or Y:)")
    kind, text = label[0], label[2:]
    try:
        if kind == "H":
            t = datetime.datetime.strptime(text, "%Y-%m-%dT%H") + datetime.timedelta(hours=n)
            return t.strftime("H:%Y-%m-%dT%H")
        if kind == "D":
            d = datetime.datetime.strptime(text, "%Y-%m-%d").date() + datetime.timedelta(days=n)
            return d.strftime("D:%Y-%m-%d")
        if kind == "W":
            d = datetime.date.fromisocalendar(int(text[:4]), int(text[6:]), 1) + datetime.timedelta(weeks=n)
            iso = d.isocalendar()
            return f"W:{iso[0]:04d}-W{iso[1]:02d}"
        if kind == "M":
            m = int(text[:4]) * 12 + int(text[5:]) - 1 + n
            return f"M:{m // 12:04d}-{m % 12 + 1:02d}"
        return f"Y:{int(text) + n:04d}"
    except (ValueError, OverflowError):
        raise _bad("first", f"`{label}` is not a period of the calendar") from None


def start(label: str, name: str) -> datetime.datetime:
    """Where the period labelled label starts (naive UTC)."""
    if not _expr.LABEL.match(label) or label == "U":
        raise _bad(name, f"`{label}` is not a period label (H:, D:, W:, M: or Y:)")
    kind, text = label[0], label[2:]
    try:
        if kind == "H":
            return datetime.datetime.strptime(text, "%Y-%m-%dT%H")
        if kind == "D":
            return datetime.datetime.strptime(text, "%Y-%m-%d")
        if kind == "W":
            d = datetime.date.fromisocalendar(int(text[:4]), int(text[6:]), 1)
            return datetime.datetime(d.year, d.month, d.day)
        if kind == "M":
            return datetime.datetime(int(text[:4]), int(text[5:]), 1)
        return datetime.datetime(int(text), 1, 1)
    except ValueError:
        raise _bad(name, f"`{label}` is not a period of the calendar") from None


def periods(first: str, last: str) -> List[str]:
    """The labels from first to last inclusive (one granularity, at most MAX_RANGE)."""
    if start(first, "range") > start(last, "range"):
        raise _bad("range", f"{first} is after {last}")
    if first[0] != last[0]:
        raise _bad("range", f"{first} and {last} are periods of different granularities")
    out = [first]
    while out[-1] != last:
        if len(out) == MAX_RANGE:
            raise _bad("range", f"{first} to {last} is more than {MAX_RANGE} periods")
        out.append(offset(out[-1], 1))
    return out


GRANULARITY = {"H": "hour", "D": "day", "W": "week", "M": "month", "Y": "year"}


def divides(fine: str, coarse: str) -> bool:
    """Whether every period of granularity coarse is made of whole periods of fine."""
    f, c = ORDER.index(fine), ORDER.index(coarse)
    return f == c or (f < c and (fine in ("hour", "day") or (fine, coarse) == ("month", "year")))


def tmp_key(base: str) -> str:
    return f"{base}:tmp:{os.urandom(8).hex()}"


def cohort_table(periods: List[str], rows: int, columns: int, flat: List[int]) -> records.Cohort:
    """The table of analytics.cohort's reply: every return bitmap's count, then per row its size and cells."""
    returns = rows + columns - 1
    back, at = flat[:returns], returns
    sizes: List[int] = []
    counts: List[List[Optional[int]]] = []
    for i in range(rows):
        size = max(flat[at], 0)
        at += 1
        cells = min(columns, returns - i)
        counts.append([max(flat[at + k], 0) if size > 0 and back[i + k] > 0 else None for k in range(cells)])
        at += cells
        sizes.append(size)
    return records.Cohort(periods, sizes, counts)


class Analytics:
    def __init__(self, prefix: str, tag: Optional[str], max_id: int, granularities: Optional[List[str]], hll: bool) -> None:
        check_settings(prefix, max_id, "max id")
        gs = ["day", "week", "month"] if granularities is None else sorted(set(granularities), key=ORDER.index)
        if not gs:
            raise _bad("granularities", "must not be empty")
        self.prefix, self.tag, self.max_id, self.granularities, self.hll = prefix, tag, max_id, gs, hll

    def __repr__(self) -> str:
        return f"prefix={self.prefix!r}, tag={self.tag!r}"

    def key(self, event: str, period: str) -> str:
        if re.search(r"\s", event):
            raise _bad("event", f"`{event}` must not contain whitespace")
        if self.tag is None:
            return key("analytics", "event", prefix=self.prefix, event=event, period=period)
        return key("analytics", "event_tagged", prefix=self.prefix, tag=self.tag, event=event, period=period)

    def mark(self, event: str, id: int, at_s: int) -> Op[Optional[bool]]:
        at = datetime.datetime.fromtimestamp(at_s, tz=datetime.timezone.utc)
        keys = [self.key(event, p) for p in labels(at, self.granularities)]
        if id > self.max_id:
            raise errors.UidOutOfRange(f"id {id} is above the configured maximum {self.max_id}")
        if self.hll:
            strs = ["0"] * (len(keys) + 1) + [str(id)]
            reply = yield scripts.Analytics.mark_hll(keys[0] + ":hll", keys, self.max_id, strs)
            return int(reply[1]) == 1
        values = [0] * len(keys) + [id]
        return int((yield scripts.Analytics.mark(keys, self.max_id, values))) == 1

    def mark_string(self, event: str, id: str, at_s: int) -> Op[Optional[bool]]:
        at = datetime.datetime.fromtimestamp(at_s, tz=datetime.timezone.utc)
        finest = self.key(event, labels(at, self.granularities)[0])
        reply = yield scripts.Analytics.mark_hll(finest + ":hll", [], self.max_id, ["0", id])
        return int(reply[0]) == 1

    def mark_unique_string(self, event: str, id: str) -> Op[Optional[bool]]:
        unique = self.key(event, "U")
        reply = yield scripts.Analytics.mark_hll(unique + ":hll", [], self.max_id, ["0", id])
        return int(reply[0]) == 1

    def count_uniques(self, event: str, first: str, last: Optional[str]) -> Op[int]:
        if first == "U" or last == "U":
            if first != "U" or last not in (None, "U"):
                raise _bad("range", "the unique event (U) is no range: first U, last null or U")
            return max(int((yield Cmd("PFCOUNT", self.key(event, "U") + ":hll"))), 0)
        last = first if last is None else last
        if first[:1] != last[:1]:
            raise _bad("range", f"{first} and {last} are periods of different granularities")
        begin, end = start(first, "range"), start(offset(last, 1), "range")
        if begin > start(last, "range"):
            raise _bad("range", f"{first} is after {last}")
        finest = self.granularities[0]
        if not divides(finest, GRANULARITY[first[0]]):
            raise _bad("period", f"{first} is not made of whole periods of the finest granularity ({finest}), where the HyperLogLogs are")
        keys: List[str] = []
        p = labels(begin, [finest])[0]
        while start(p, "range") < end:
            if len(keys) == MAX_RANGE:
                raise _bad("range", f"{first} to {last} is more than {MAX_RANGE} {finest} periods")
            keys.append(self.key(event, p) + ":hll")
            p = offset(p, 1)
        return max(int((yield Cmd("PFCOUNT", *keys))), 0)

    def streak(self, event: str, id: int, first: str, last: str) -> Op[records.EventStreak]:
        self.key(event, first)
        ps = periods(first, last)
        if id > self.max_id:
            return records.EventStreak(0, None, 0, 0)
        r = [int(x) for x in (yield scripts.Analytics.streak([self.key(event, p) for p in ps], id))]
        return records.EventStreak(r[0], ps[r[1] - 1] if r[1] > 0 else None, r[2], r[3])

    def _active(self, event: str, at_least: int, of_last: int, last: str) -> Any:
        leaves = [{"event": event, "period": offset(last, -i)} for i in range(of_last - 1, -1, -1)]
        return {"and": leaves} if at_least == of_last else {"at_least": at_least, "of": leaves}

    def active_count(self, event: str, at_least: int, of_last: int, last: str) -> Op[int]:
        return (yield from self.query_count(self._active(event, at_least, of_last, last), None, 60000))

    def active_contains(self, event: str, at_least: int, of_last: int, last: str, id: int) -> Op[bool]:
        return (yield from self.query_contains(self._active(event, at_least, of_last, last), id, None, 60000))

    def active_members(self, event: str, at_least: int, of_last: int, last: str, from_: int, limit: int) -> Op[records.Page]:
        return (yield from self.query_members(self._active(event, at_least, of_last, last), from_, limit, None, 60000))

    def mark_unique(self, event: str, id: int) -> Op[Optional[bool]]:
        keys = [self.key(event, "U")]
        if id > self.max_id:
            raise errors.UidOutOfRange(f"id {id} is above the configured maximum {self.max_id}")
        if self.hll:
            reply = yield scripts.Analytics.mark_hll(keys[0] + ":hll", keys, self.max_id, ["0", "0", str(id)])
            return int(reply[1]) == 1
        return int((yield scripts.Analytics.mark(keys, self.max_id, [0, id]))) == 1

    def count(self, event: str, period: str) -> Op[int]:
        return max(int((yield Cmd("BITCOUNT", self.key(event, period)))), 0)

    def _base(self, event: str) -> str:
        return self.prefix + "{" + (self.tag if self.tag is not None else event) + "}"

    def _leaf(self, event: str, period: str) -> str:
        if not event or "{" in event or "}" in event:
            raise _bad("event", "must not be empty and must not contain '{' or '}'")
        return self.key(event, period)

    def _query(self, expr: Any, answer: str, at: int, limit: int, cache: Optional[str], ttl_ms: int) -> Op[List[int]]:
        events: List[str] = []

        def leaf(event: str, period: str) -> str:
            events.append(event)
            return self._leaf(event, period)

        node, leaves = _expr.read(expr, leaf)
        base = self._base(events[0])
        if cache is not None and re.search(r"\s", cache):
            raise _bad("cache", f"`{cache}` must not contain whitespace")
        result, ttl = (f"{base}:cache:{cache}", ttl_ms) if cache is not None else (tmp_key(base), 0)
        env = yield ENV
        if not env.cluster or all(slot(k) == slot(result) for k in leaves):
            prog = _expr.compile_(node)
            operands = [tmp_key(base) for _ in range(prog.registers)] + prog.inputs
            call = scripts.Analytics.query(result, operands, False, prog.registers, answer, at, limit, ttl, prog.steps())
            return [int(x) for x in (yield call)]
        keys = sorted(set(leaves))
        bitmaps, n = _expr.ints(each((yield [Cmd("GET", k) for k in keys])))
        bits = _expr.evaluate(node, dict(zip(keys, bitmaps)))
        return _expr.answer(bits, n, answer, at, limit)

    def query_count(self, expr: Any, cache: Optional[str], ttl_ms: int) -> Op[int]:
        return max((yield from self._query(expr, "COUNT", 0, 0, cache, ttl_ms))[0], 0)

    def query_contains(self, expr: Any, id: int, cache: Optional[str], ttl_ms: int) -> Op[bool]:
        if id > MAX_OFFSET:
            _expr.read(expr, self._leaf)
            return False
        return (yield from self._query(expr, "MEMBER", id, 0, cache, ttl_ms))[0] == 1

    def query_members(self, expr: Any, from_: int, limit: int, cache: Optional[str], ttl_ms: int) -> Op[records.Page]:
        if from_ > MAX_OFFSET:
            _expr.read(expr, self._leaf)
            return records.Page([], None)
        reply = yield from self._query(expr, "MEMBERS", from_, limit, cache, ttl_ms)
        return records.Page(reply[1:], reply[0] if reply[0] >= 0 else None)

    def cohort(self, cohort_event: str, return_event: str, first: str, rows: int, columns: int) -> Op[records.Cohort]:
        periods = [offset(first, i) for i in range(rows + columns - 1)]
        bitmaps = [self.key(cohort_event, p) for p in periods[:rows]] + [self.key(return_event, p) for p in periods]
        tmp = tmp_key(self._base(cohort_event))
        env = yield ENV
        if not env.cluster or all(slot(k) == slot(tmp) for k in bitmaps):
            flat = [int(x) for x in (yield scripts.Analytics.cohort(tmp, bitmaps, rows, columns))]
            return cohort_table(periods[:rows], rows, columns, flat)
        blobs, n = _expr.ints(each((yield [Cmd("GET", k) for k in bitmaps])))
        cohorts, back = blobs[:rows], blobs[rows:]
        flat = [bin(b).count("1") for b in back]
        for i, c in enumerate(cohorts):
            flat.append(bin(c).count("1"))
            flat.extend(bin(c & r).count("1") for r in back[i : i + columns])
        return cohort_table(periods[:rows], rows, columns, flat)
