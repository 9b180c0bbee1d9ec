"""Daily sign-in bitmaps and the monthly login log (manifest: patterns[signin],
patterns[login_log]): bit uid of a day's bitmap is set when that user was active."""


import datetime
import os

from . import scripts
from ._contract import CONSTANTS, DEFAULTS, key
from ._core import Cmd, is_cluster, runner
from ._errors import InvalidArgument, UidOutOfRange

_S, _SD = CONSTANTS["signin"], DEFAULTS["signin"]
_L, _LD = CONSTANTS["login_log"], DEFAULTS["login_log"]
_EPOCH = datetime.date(1970, 1, 1)


def decode_bits(bitmap):
    """The offsets of the set bits, ascending (bit 0: the high bit of byte 0)."""
    out = []
    for i, byte in enumerate(bitmap or b""):
        for bit in range(8):
            if byte & (0x80 >> bit):
                out.append(i * 8 + bit)
    return out


def expire_at(retention_s, period_end):
    """0 when kept forever, else 00:00 UTC of period_end plus retention_s."""
    if retention_s is None:
        return 0
    at = (period_end - _EPOCH).days * 86400 + retention_s
    if at <= 0:
        raise InvalidArgument("retention", f"a period ending at {period_end} would expire before 1970")
    return at


def _days(first, last):
    if first > last:
        raise InvalidArgument("day range", f"reversed: {first} is after {last}")
    if (last - first).days >= _S["max_range_days"]:
        raise InvalidArgument("day range", f"must span at most {_S['max_range_days']} days")
    return [first + datetime.timedelta(days=i) for i in range((last - first).days + 1)]


def months(first, last):
    """(first day, last day) of each calendar month of first..last."""
    out = []
    days = _days(first, last)
    for d in days:
        if not out or (d.year, d.month) != (out[-1][0].year, out[-1][0].month):
            out.append([d, d])
        out[-1][1] = d
    return [tuple(m) for m in out]


def _fold(op, bitmaps):
    acc = None
    for b in bitmaps:
        b = bytearray(b or b"")
        if acc is None:
            acc = b
        elif op == "OR":
            acc = bytearray(x | y for x, y in zip(acc.ljust(len(b), b"\0"), b.ljust(len(acc), b"\0")))
        else:
            acc = bytearray(x & y for x, y in zip(acc, b))
    return bytes(acc or b"")


def _tmp(base):
    return key("signin", "tmp", base=base, hex16=os.urandom(8).hex())


def _check_uid(uid, max_uid):
    if uid > max_uid:
        raise UidOutOfRange(None, f"uid {uid} is above the configured maximum {max_uid}")


class SignIn:
    """Daily sign-in bitmaps <prefix><YYYYMMDD>, or <prefix>{<tag>}:<YYYYMMDD> with a tag."""

    def __init__(self, client, prefix=_SD["prefix"], tag=_SD["tag"], max_uid=_SD["max_uid"], retention_s=_SD["retention_s"]):
        if any(c.isspace() for c in prefix):
            raise InvalidArgument("prefix", "must not contain whitespace")
        if tag is not None and (not tag or "{" in tag or "}" in tag):
            raise InvalidArgument("tag", "must not be empty and must not contain '{' or '}'")
        if max_uid > _S["max_offset"]:
            raise InvalidArgument("max uid", f"{max_uid} is above the largest bit offset {_S['max_offset']}")
        self._run = runner(client)
        self._cluster = is_cluster(client)
        self.prefix, self.tag, self.max_uid, self.retention_s = prefix, tag, max_uid, retention_s

    def key(self, day):
        date = day.strftime("%Y%m%d")
        if self.tag is None:
            return key("signin", "day", prefix=self.prefix, YYYYMMDD=date)
        return key("signin", "day_tagged", prefix=self.prefix, tag=self.tag, YYYYMMDD=date)

    def _base(self):
        if self.tag is not None:
            return key("signin", "day_tagged", prefix=self.prefix, tag=self.tag, YYYYMMDD="").rstrip(":")
        return self.prefix.rstrip(":") or _S["tmp_base_bare"]

    def sign_in(self, uid, day):
        """Marks uid signed in on day; True when it is the first sign-in that day."""
        return self._run(self._sign_in(uid, day))

    def _sign_in(self, uid, day):
        _check_uid(uid, self.max_uid)
        exp = expire_at(self.retention_s, day + datetime.timedelta(days=1))
        return (yield scripts.Signin.mark(self.key(day), uid, self.max_uid, exp)) == 1

    def signed_in(self, uid, day):
        return self._run(self._getbit(self.key(day), uid, uid <= self.max_uid))

    @staticmethod
    def _getbit(k, offset, ask=True):
        if not ask:
            return False
        return (yield Cmd("GETBIT", k, offset)) == 1

    def count(self, day):
        return self._run(self._bitcount(self.key(day)))

    @staticmethod
    def _bitcount(k):
        return max((yield Cmd("BITCOUNT", k)), 0)

    def _combined(self, op, first, last):
        keys = [self.key(d) for d in _days(first, last)]
        if self._cluster and self.tag is None:
            return _fold(op, (yield [Cmd("GET", k) for k in keys]))
        return (yield scripts.Signin.combine(_tmp(self._base()), keys, op)) or b""

    def _users(self, op, first, last):
        return decode_bits((yield from self._combined(op, first, last)))

    def active_any(self, first, last):
        """Users signed in on at least one day of first..last, ascending."""
        return self._run(self._users("OR", first, last))

    def active_every(self, first, last):
        """Users signed in on every day of first..last, ascending."""
        return self._run(self._users("AND", first, last))

    def _count(self, op, first, last):
        if self._cluster and self.tag is None:
            return sum(bin(b).count("1") for b in (yield from self._combined(op, first, last)))
        keys = [self.key(d) for d in _days(first, last)]
        return max((yield scripts.Signin.count(_tmp(self._base()), keys, op)), 0)

    def count_any(self, first, last):
        return self._run(self._count("OR", first, last))

    def count_every(self, first, last):
        return self._run(self._count("AND", first, last))


def _check_type(user_type):
    if not user_type or not all(c.isascii() and (c.isalnum() or c == "-") for c in user_type):
        raise InvalidArgument("user type", f"{user_type!r} must be non-empty ASCII letters, digits or '-'")


class LoginLog:
    """The monthly login log <prefix><YYYY-MM>_<type>_<uid> with day indexes per type."""

    def __init__(self, client, prefix=_LD["prefix"], max_uid=_LD["max_uid"], retention_s=_LD["retention_s"]):
        if any(c.isspace() for c in prefix) or "{" in prefix or "}" in prefix:
            raise InvalidArgument("prefix", "must not contain whitespace, '{' or '}'")
        self._run = runner(client)
        self._cluster = is_cluster(client)
        self.prefix, self.max_uid, self.retention_s = prefix, max_uid, retention_s

    def log_key(self, user_type, uid, day):
        return key("login_log", "log", prefix=self.prefix, type=user_type, uid=uid, **{"YYYY-MM": day.strftime("%Y-%m")})

    def index_key(self, user_type, day):
        return key("login_log", "day_index", prefix=self.prefix, type=user_type, YYYYMMDD=day.strftime("%Y%m%d"), **{"YYYY-MM": day.strftime("%Y-%m")})

    def types_key(self, day):
        return key("login_log", "types", prefix=self.prefix, **{"YYYY-MM": day.strftime("%Y-%m")})

    def _tmp_key(self, day):
        return key("login_log", "tmp", prefix=self.prefix, hex16=os.urandom(8).hex(), **{"YYYY-MM": day.strftime("%Y-%m")})

    def record(self, user_type, uid, day):
        """Records a login; True when it is the user's first recorded that day."""
        return self._run(self._record(user_type, uid, day))

    def _record(self, user_type, uid, day):
        _check_type(user_type)
        _check_uid(uid, self.max_uid)
        nxt = datetime.date(day.year + day.month // 12, day.month % 12 + 1, 1)
        log_exp = expire_at(self.retention_s, nxt)
        index_exp = expire_at(self.retention_s, day + datetime.timedelta(days=1))
        log, index, types = self.log_key(user_type, uid, day), self.index_key(user_type, day), self.types_key(day)
        if not self._cluster:
            return (yield scripts.LoginLog.record(log, index, types, day.day, uid, self.max_uid, user_type, log_exp, index_exp)) == 1
        # The cluster split: the log has no hash tag; both halves are idempotent.
        first, indexed = yield [
            scripts.LoginLog.mark(log, day.day, log_exp),
            scripts.LoginLog.index(index, types, uid, self.max_uid, user_type, index_exp),
        ]
        for r in (first, indexed):
            if isinstance(r, Exception):
                raise r
        return first == 1

    def logged_in_on(self, user_type, uid, day):
        _check_type(user_type)
        return self._run(SignIn._getbit(self.log_key(user_type, uid, day), day.day))

    def days_in_month(self, user_type, uid, year, month):
        _check_type(user_type)
        return self._run(SignIn._bitcount(self.log_key(user_type, uid, datetime.date(year, month, 1))))

    def login_days(self, user_type, uid, first, last):
        """The days of first..last on which the user logged in, ascending."""
        _check_type(user_type)
        return self._run(self._login_days(user_type, uid, months(first, last)))

    def _login_days(self, user_type, uid, ms):
        replies = yield [scripts.LoginLog.days(self.log_key(user_type, uid, a), a.day, b.day) for a, b in ms]
        out = []
        for (a, _), days in zip(ms, replies):
            if isinstance(days, Exception):
                raise days
            out.extend(a.replace(day=d) for d in days)
        return out

    def active_users(self, user_type, first, last):
        """Users of user_type who logged in on any day of first..last, ascending."""
        _check_type(user_type)
        return self._run(self._active(user_type, months(first, last)))

    def _active(self, user_type, ms):
        calls = []
        for a, b in ms:
            days = [a + datetime.timedelta(days=i) for i in range((b - a).days + 1)]
            calls.append(scripts.Signin.combine(self._tmp_key(a), [self.index_key(user_type, d) for d in days], "OR"))
        replies = yield calls
        for r in replies:
            if isinstance(r, Exception):
                raise r
        return decode_bits(_fold("OR", replies))

    def all_active_users(self, first, last):
        """(user_type, uid) of every user active on any day of first..last, by type then uid."""
        return self._run(self._all_active(months(first, last)))

    def _all_active(self, ms):
        sets = yield [Cmd("SMEMBERS", self.types_key(a)) for a, _ in ms]
        types = sorted({t.decode() for s in sets for t in s})
        out = []
        for t in types:
            out.extend((t, uid) for uid in (yield from self._active(t, ms)))
        return out


