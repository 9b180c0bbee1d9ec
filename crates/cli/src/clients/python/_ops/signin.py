"""Daily sign-in bitmaps (src/signin, src/bitmap, lua/signin)."""

from __future__ import annotations

import datetime
import os
from typing import List, Optional, Tuple

from .. import _days, errors, records, scripts
from .._contract import key
from .._driver import ENV, Cmd, Env, Op, Request, each, slot

MAX_OFFSET = 4294967295


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def check_settings(prefix: str, max_uid: int, what: str = "max uid") -> None:
    """The settings of a bitmap pattern (sign-in, login log, analytics): a prefix that names keys, ids within a bitmap."""
    if any(c.isspace() for c in prefix):
        raise _bad("prefix", "must not contain whitespace")
    if "{" in prefix or "}" in prefix:
        raise _bad("prefix", "must not contain '{' or '}'")
    if max_uid > MAX_OFFSET:
        raise _bad(what, f"{max_uid} is above the largest bit offset {MAX_OFFSET}")


def check_uid(uid: int, max_uid: int) -> None:
    if uid > max_uid:
        raise errors.UidOutOfRange(f"uid {uid} is above the configured maximum {max_uid}")


def tmp_key(base: str) -> str:
    return f"{base}:tmp:{os.urandom(8).hex()}"


def combined(env: Env, base: str, keys: List[str]) -> Optional[str]:
    """The temporary key of one script over `keys`, or None when they must be fetched (cluster, other slots)."""
    tmp = tmp_key(base)
    if not env.cluster:
        return tmp
    s = slot(tmp)
    return tmp if all(slot(k) == s for k in keys) else None


def read_groups(env: Env, op: str, groups: List[Tuple[str, List[str]]]) -> List[Request]:
    """Per (base, keys) group: one signin.combine call, or a GET of each key."""
    batch: List[Request] = []
    for base, keys in groups:
        tmp = combined(env, base, keys)
        if tmp is not None:
            batch.append(scripts.Signin.combine(tmp, keys, op))
        else:
            batch.extend(Cmd("GET", k) for k in keys)
    return batch


class SignIn:
    def __init__(self, prefix: str, tag: Optional[str], max_uid: int, retention_s: Optional[int]) -> None:
        check_settings(prefix, max_uid)
        self.prefix, self.tag, self.max_uid, self.retention_s = prefix, tag, max_uid, retention_s

    def __repr__(self) -> str:
        return f"prefix={self.prefix!r}, tag={self.tag!r}"

    def key(self, day: datetime.date) -> str:
        d = day.strftime("%Y%m%d")
        if self.tag is None:
            return key("signin", "day", prefix=self.prefix, YYYYMMDD=d)
        return key("signin", "day_tagged", prefix=self.prefix, tag=self.tag, YYYYMMDD=d)

    def _base(self) -> str:
        if self.tag is not None:
            return self.prefix + "{" + self.tag + "}"
        return self.prefix.rstrip(":") or "signin"

    def sign_in(self, uid: int, day: datetime.date) -> Op[Optional[bool]]:
        check_uid(uid, self.max_uid)
        expire = _days.expire_at(self.retention_s, day + datetime.timedelta(days=1))
        return int((yield scripts.Signin.mark(self.key(day), uid, self.max_uid, expire))) == 1

    def signed_in(self, uid: int, day: datetime.date) -> Op[bool]:
        if uid > self.max_uid:
            return False
        return int((yield Cmd("GETBIT", self.key(day), uid))) == 1

    def count(self, day: datetime.date) -> Op[int]:
        return max(int((yield Cmd("BITCOUNT", self.key(day)))), 0)

    def _users(self, op: str, from_: datetime.date, to: datetime.date) -> Op[List[int]]:
        keys = [self.key(d) for d in _days.days(from_, to)]
        env = yield ENV
        replies = each((yield read_groups(env, op, [(self._base(), keys)])))
        return _days.decode_bits(_days.fold(op, replies))

    def _count(self, op: str, from_: datetime.date, to: datetime.date) -> Op[int]:
        keys = [self.key(d) for d in _days.days(from_, to)]
        env = yield ENV
        tmp = combined(env, self._base(), keys)
        if tmp is not None:
            return max(int((yield scripts.Signin.count(tmp, keys, op))), 0)
        replies = each((yield [Cmd("GET", k) for k in keys]))
        return len(_days.decode_bits(_days.fold(op, replies)))

    def active_any(self, from_: datetime.date, to: datetime.date) -> Op[List[int]]:
        return (yield from self._users("OR", from_, to))

    def active_every(self, from_: datetime.date, to: datetime.date) -> Op[List[int]]:
        return (yield from self._users("AND", from_, to))

    def count_any(self, from_: datetime.date, to: datetime.date) -> Op[int]:
        return (yield from self._count("OR", from_, to))

    def count_every(self, from_: datetime.date, to: datetime.date) -> Op[int]:
        return (yield from self._count("AND", from_, to))

    def days_signed_in(self, uid: int, from_: datetime.date, to: datetime.date) -> Op[List[datetime.date]]:
        days = _days.days(from_, to)
        check_uid(uid, self.max_uid)
        bits = each((yield [Cmd("GETBIT", self.key(d), uid) for d in days]))
        return [d for d, b in zip(days, bits) if int(b) == 1]

    def streak(self, uid: int, from_: datetime.date, to: datetime.date) -> Op[records.Streak]:
        days = yield from self.days_signed_in(uid, from_, to)
        longest, ends, run = 0, None, 0
        prev: Optional[datetime.date] = None
        for d in days:
            run = run + 1 if prev is not None and prev + datetime.timedelta(days=1) == d else 1
            if run > longest:
                longest, ends = run, d
            prev = d
        return records.Streak(longest, ends, run if prev == to else 0)
