"""Days, ranges, months, time zones and expiry, as the day-keyed patterns
compute them (src/bitmap/days.rs, src/visits/day.rs)."""

from __future__ import annotations

import datetime
import re
from typing import List, Optional, Tuple, Union

from . import errors

MAX_RANGE_DAYS = 3660
_EPOCH = datetime.date(1970, 1, 1)
_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")

Zone = datetime.tzinfo


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def zone(name: str) -> Zone:
    """UTC, a fixed offset +HH:MM, or an IANA zone name."""
    if name == "UTC":
        return datetime.timezone.utc
    m = _OFFSET.match(name)
    if m:
        delta = datetime.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return datetime.timezone(delta if m.group(1) == "+" else -delta)
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception:
        raise _bad("time_zone", f"{name!r} is not UTC, +HH:MM or a known IANA zone") from None


def days(first: datetime.date, last: datetime.date) -> List[datetime.date]:
    """Every day of first..last (never reversed, at most 3660 days)."""
    if first > last:
        raise _bad("day range", f"reversed: {first} is after {last}")
    if (last - first).days >= MAX_RANGE_DAYS:
        raise _bad("day range", f"must span at most {MAX_RANGE_DAYS} days")
    return [first + datetime.timedelta(days=i) for i in range((last - first).days + 1)]


def months(first: datetime.date, last: datetime.date) -> List[Tuple[datetime.date, datetime.date]]:
    """(first day, last day) of each calendar month of first..last, cut to the range."""
    out: List[List[datetime.date]] = []
    for d in days(first, last):
        if not out or (d.year, d.month) != (out[-1][0].year, out[-1][0].month):
            out.append([d, d])
        out[-1][1] = d
    return [(m[0], m[1]) for m in out]


def next_month(day: datetime.date) -> datetime.date:
    return datetime.date(day.year + 1, 1, 1) if day.month == 12 else datetime.date(day.year, day.month + 1, 1)


def expire_at(retention_s: Optional[int], period_end: datetime.date) -> int:
    """0 when kept forever, else 00:00 UTC of period_end plus the retention."""
    if retention_s is None:
        return 0
    at = (period_end - _EPOCH).days * 86400 + retention_s
    if at <= 0:
        raise _bad("retention", f"a period ending at {period_end} would expire before 1970")
    return at


def end_of_day(day: datetime.date, tz: Zone) -> int:
    """The first instant of the day after `day` in `tz`, as unix seconds (a DST gap
    at midnight: the first valid local time after it; ambiguous: the earlier)."""
    midnight = datetime.datetime.combine(day + datetime.timedelta(days=1), datetime.time())
    for minute in range(24 * 60 + 1):
        local = midnight + datetime.timedelta(minutes=minute)
        aware = local.replace(tzinfo=tz, fold=0)
        back = aware.astimezone(datetime.timezone.utc).astimezone(tz)
        if back.replace(tzinfo=None) == local:
            return int(aware.timestamp())
    raise _bad("day", f"{day}: the zone has no valid local time on the next day")


def iso(day: datetime.date) -> str:
    return day.isoformat()


def parse(text: Union[str, bytes]) -> datetime.date:
    return datetime.date.fromisoformat(text.decode() if isinstance(text, bytes) else text)


def decode_bits(bitmap: Optional[bytes]) -> List[int]:
    """The offsets of the set bits, ascending (bit 0: the high bit of byte 0)."""
    out: List[int] = []
    for i, byte in enumerate(bitmap or b""):
        for bit in range(8):
            if byte & (0x80 >> bit):
                out.append(i * 8 + bit)
    return out


def fold(op: str, bitmaps: List[Optional[bytes]]) -> bytes:
    """OR or AND of bitmaps, as BITOP (a missing key is empty)."""
    acc: Optional[bytearray] = None
    for raw in bitmaps:
        b = bytearray(raw or b"")
        if acc is None:
            acc = b
        elif op == "OR":
            n = max(len(acc), len(b))
            acc = bytearray(x | y for x, y in zip(acc.ljust(n, b"\0"), b.ljust(n, b"\0")))
        else:
            acc = bytearray(x & y for x, y in zip(acc, b))
    return bytes(acc or b"")
