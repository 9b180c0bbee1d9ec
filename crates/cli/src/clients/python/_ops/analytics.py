"""Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC."""

from __future__ import annotations

import datetime
import re
from typing import List, Optional

from .. import errors, scripts
from .._contract import key
from .._driver import Cmd, Op

MAX_OFFSET = 4294967295
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


class Analytics:
    def __init__(self, prefix: str, tag: Optional[str], max_id: int, granularities: Optional[List[str]]) -> None:
        if re.search(r"\s", prefix):
            raise _bad("prefix", "must not contain whitespace")
        if "{" in prefix or "}" in prefix:
            raise _bad("prefix", "must not contain '{' or '}'")
        if max_id > MAX_OFFSET:
            raise _bad("max id", f"{max_id} is above the largest bit offset {MAX_OFFSET}")
        gs = ["day", "week", "month"] if granularities is None else sorted(set(granularities), key=ORDER.index)
        if not gs:
            raise _bad("granularities", "must not be empty")
        self.prefix, self.tag, self.max_id, self.granularities = prefix, tag, max_id, gs

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
        values = [0] * len(keys) + [id]
        return int((yield scripts.Analytics.mark(keys, self.max_id, values))) == 1

    def count(self, event: str, period: str) -> Op[int]:
        return max(int((yield Cmd("BITCOUNT", self.key(event, period)))), 0)
