"""The monthly login log of the PHP recipe (src/login_log, lua/login_log)."""

from __future__ import annotations

import datetime
from typing import Dict, List, Optional, Sequence, Set, Tuple

from .. import _days, errors, records, scripts
from .._contract import key
from .._driver import ENV, NODES, SERVER, Cmd, Op, each, slot, text
from .signin import check_settings, check_uid, read_groups

MIN_RETENTION_DAYS = 32
LAST_MONTH_UNTIL_DAY = 8


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def check_type(user_type: str) -> None:
    if not user_type or not all(c.isascii() and (c.isalnum() or c == "-") for c in user_type):
        raise _bad("user type", f"`{user_type}` must be non-empty ASCII letters, digits or '-'")


def _month(year: int, month: int) -> datetime.date:
    try:
        return datetime.date(year, month, 1)
    except ValueError:
        raise _bad("month", f"{year}-{month:02} is not a valid month") from None


def _glob(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


class LoginLog:
    def __init__(self, prefix: str, max_uid: int, retention_s: Optional[int]) -> None:
        check_settings(prefix, max_uid)
        self.prefix, self.max_uid, self.retention_s = prefix, max_uid, retention_s

    def __repr__(self) -> str:
        return f"prefix={self.prefix!r}, max_uid={self.max_uid}"

    def log_key(self, user_type: str, uid: int, day: datetime.date) -> str:
        return key("login_log", "log", prefix=self.prefix, type=user_type, uid=uid, **{"YYYY-MM": day.strftime("%Y-%m")})

    def index_key(self, user_type: str, day: datetime.date) -> str:
        return key("login_log", "day_index", prefix=self.prefix, type=user_type, YYYYMMDD=day.strftime("%Y%m%d"),
                   **{"YYYY-MM": day.strftime("%Y-%m")})

    def types_key(self, day: datetime.date) -> str:
        return key("login_log", "types", prefix=self.prefix, **{"YYYY-MM": day.strftime("%Y-%m")})

    def month_of(self, day: datetime.date) -> datetime.date:
        return day.replace(day=1)

    def sync_months(self, today: datetime.date) -> List[datetime.date]:
        this = today.replace(day=1)
        before = [(this - datetime.timedelta(days=1)).replace(day=1)] if today.day < LAST_MONTH_UNTIL_DAY else []
        return before + [this]

    def _tag(self, day: datetime.date) -> str:
        return self.prefix + "{" + day.strftime("%Y-%m") + "}"

    def record(self, user_type: str, uid: int, day: datetime.date) -> Op[Optional[bool]]:
        check_type(user_type)
        check_uid(uid, self.max_uid)
        log_exp = _days.expire_at(self.retention_s, _days.next_month(day))
        index_exp = _days.expire_at(self.retention_s, day + datetime.timedelta(days=1))
        log, index, types = self.log_key(user_type, uid, day), self.index_key(user_type, day), self.types_key(day)
        env = yield ENV
        if not env.cluster or slot(log) == slot(index):
            return int((yield scripts.LoginLog.record(log, index, types, day.day, uid, self.max_uid, user_type, log_exp,
                                                      index_exp))) == 1
        first, _ = each((yield [scripts.LoginLog.mark(log, day.day, log_exp),
                                scripts.LoginLog.index(index, types, uid, self.max_uid, user_type, index_exp)]))
        return int(first) == 1

    def logged_in_on(self, user_type: str, uid: int, day: datetime.date) -> Op[bool]:
        check_type(user_type)
        return int((yield Cmd("GETBIT", self.log_key(user_type, uid, day), day.day))) == 1

    def days_in_month(self, user_type: str, uid: int, year: int, month: int) -> Op[int]:
        check_type(user_type)
        return max(int((yield Cmd("BITCOUNT", self.log_key(user_type, uid, _month(year, month))))), 0)

    def logged_in_in_month(self, user_type: str, uid: int, year: int, month: int) -> Op[bool]:
        return (yield from self.days_in_month(user_type, uid, year, month)) > 0

    def logged_in_between(self, user_type: str, uid: int, from_: datetime.date, to: datetime.date) -> Op[bool]:
        check_type(user_type)
        ms = _days.months(from_, to)
        got = each((yield [Cmd("BITCOUNT", self.log_key(user_type, uid, a), a.day, b.day, "BIT") for a, b in ms]))
        return any(int(n) > 0 for n in got)

    def login_days(self, user_type: str, uid: int, from_: datetime.date, to: datetime.date) -> Op[List[datetime.date]]:
        check_type(user_type)
        ms = _days.months(from_, to)
        replies = each((yield [scripts.LoginLog.days(self.log_key(user_type, uid, a), a.day, b.day) for a, b in ms]))
        return [a.replace(day=int(d)) for (a, _), days in zip(ms, replies) for d in days]

    def _union(self, user_type: str, ms: List[Tuple[datetime.date, datetime.date]]) -> Op[bytes]:
        groups = [(self._tag(a), [self.index_key(user_type, d) for d in _days.days(a, b)]) for a, b in ms]
        env = yield ENV
        return _days.fold("OR", each((yield read_groups(env, "OR", groups))))

    def active_users(self, user_type: str, from_: datetime.date, to: datetime.date) -> Op[List[int]]:
        check_type(user_type)
        return _days.decode_bits((yield from self._union(user_type, _days.months(from_, to))))

    def _types(self, ms: List[Tuple[datetime.date, datetime.date]]) -> Op[List[str]]:
        sets = each((yield [Cmd("SMEMBERS", self.types_key(a)) for a, _ in ms]))
        return sorted({text(t) for s in sets for t in s})

    def types_between(self, from_: datetime.date, to: datetime.date) -> Op[List[str]]:
        return (yield from self._types(_days.months(from_, to)))

    def all_active_users(self, from_: datetime.date, to: datetime.date) -> Op[List[records.ActiveUser]]:
        ms = _days.months(from_, to)
        out: List[records.ActiveUser] = []
        for t in (yield from self._types(ms)):
            out.extend(records.ActiveUser(t, uid) for uid in _days.decode_bits((yield from self._union(t, ms))))
        return out

    def month_users(self, month: datetime.date) -> Op[List[records.ActiveUser]]:
        first = month.replace(day=1)
        last = _days.next_month(first) - datetime.timedelta(days=1)
        return (yield from self.all_active_users(first, last))

    def month_logins(self, month: datetime.date, users: Sequence[records.ActiveUser]) -> Op[List[records.MonthLogins]]:
        first = month.replace(day=1)
        if not users:
            return []
        logs = each((yield [Cmd("GET", self.log_key(u.user_type, u.uid, first)) for u in users]))
        label = first.strftime("%Y-%m")
        return [records.MonthLogins(label, u.user_type, u.uid, [d for d in _days.decode_bits(log) if 1 <= d <= 31])
                for u, log in zip(users, logs)]

    def _exports_key(self) -> str:
        return self.prefix + "exports"

    def mark_exported(self, month: datetime.date, on: datetime.date) -> Op[None]:
        yield Cmd("HSET", self._exports_key(), month.strftime("%Y-%m"), on.isoformat())

    def exports(self) -> Op[List[Tuple[datetime.date, datetime.date]]]:
        reply = yield Cmd("HGETALL", self._exports_key())
        items = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
        out = []
        for m, d in items:
            try:
                out.append((_days.parse(text(m) + "-01"), _days.parse(text(d))))
            except ValueError:
                continue
        return sorted(out)

    def expire_month(self, month: datetime.date, keep_days: int, today: datetime.date) -> Op[records.Expiry]:
        if keep_days < MIN_RETENTION_DAYS:
            raise _bad("retention", f"must be at least {MIN_RETENTION_DAYS} days after a month ends")
        first = month.replace(day=1)
        end = _days.next_month(first)
        label = first.strftime("%Y-%m")
        if (today - end).days < keep_days:
            return records.Expiry("kept", label, None, None)
        last = yield Cmd("HGET", self._exports_key(), label)
        last_export = None if last is None else text(last)
        if last_export is None or _days.parse(last_export) < end:
            return records.Expiry("not_exported", label, None, last_export)
        users = yield from self.month_users(first)
        doomed = [self.log_key(u.user_type, u.uid, first) for u in users]
        types = yield from self._types([(first, first)])
        doomed += [self.index_key(t, d) for t in types for d in _days.days(first, end - datetime.timedelta(days=1))]
        doomed.append(self.types_key(first))
        got = each((yield [Cmd("DEL", k) for k in doomed] + [Cmd("HDEL", self._exports_key(), label)]))
        return records.Expiry("deleted", label, sum(int(n) for n in got[:-1]), None)

    def _month_prefix(self, year: int, month: int, count: int) -> Tuple[datetime.date, str]:
        first = _month(year, month)
        if count == 0:
            raise _bad("count", "must be at least 1")
        return first, self.prefix + first.strftime("%Y-%m_")

    def _page(self, first: datetime.date, month_prefix: str, count: int, at: Dict[str, Optional[int]]) -> Op[List[int]]:
        """One page: a SCAN on every node not done (`at` moves on), then the logs found: [logs, days, new, skipped]."""
        pattern = _glob(month_prefix) + "*"
        todo = [n for n, c in at.items() if c is not None]
        pages = each((yield [Cmd("SCAN", at[n], "MATCH", pattern, "COUNT", count, "TYPE", "string",
                                 node=None if n == SERVER else n) for n in todo]))
        found: List[Tuple[str, str, int]] = []
        skipped = 0
        for n, (nxt, keys) in zip(todo, pages):
            at[n] = int(nxt) or None
            for k in keys:
                parsed = self._parse(text(k), month_prefix)
                if parsed is None:
                    skipped += 1
                else:
                    found.append(parsed)
        if not found:
            return [0, 0, 0, skipped]
        bits = each((yield [Cmd("GETRANGE", k, 0, 3) for k, _, _ in found]))
        calls = []
        for (_, user_type, uid), b in zip(found, bits):
            for d in _days.decode_bits(bytes(b)):
                if 1 <= d <= 31:
                    try:
                        day = first.replace(day=d)
                    except ValueError:
                        continue
                    exp = _days.expire_at(self.retention_s, day + datetime.timedelta(days=1))
                    calls.append(scripts.LoginLog.index(self.index_key(user_type, day), self.types_key(day), uid,
                                                        self.max_uid, user_type, exp))
        got = each((yield calls)) if calls else []
        return [len(found), len(got), sum(int(x) for x in got), skipped]

    def reindex(self, year: int, month: int, count: int) -> Op[records.ReindexReport]:
        first, month_prefix = self._month_prefix(year, month, count)
        at: Dict[str, Optional[int]] = {n: 0 for n in (yield NODES)}
        total = [0, 0, 0, 0]
        while any(c is not None for c in at.values()):
            page = yield from self._page(first, month_prefix, count, at)
            total = [a + b for a, b in zip(total, page)]
        logs, days, new, skipped = total
        return records.ReindexReport(logs, days, new, 0, skipped, True, _cursor_text(at))

    def reindex_page(self, year: int, month: int, cursor: str, count: int) -> Op[records.ReindexReport]:
        named = _cursor_of(cursor)
        first, month_prefix = self._month_prefix(year, month, count)
        at: Dict[str, Optional[int]] = {n: named[n] if n in named else 0 for n in (yield NODES)}
        page = [0, 0, 0, 0]
        if any(c is not None for c in at.values()):
            page = yield from self._page(first, month_prefix, count, at)
        logs, days, new, skipped = page
        done = bool(at) and all(c is None for c in at.values())
        return records.ReindexReport(logs, days, new, 0, skipped, done, _cursor_text(at))

    def _parse(self, k: str, month_prefix: str) -> Optional[Tuple[str, str, int]]:
        if not k.startswith(month_prefix):
            return None
        user_type, _, uid = k[len(month_prefix):].rpartition("_")
        if not user_type or not all(c.isascii() and (c.isalnum() or c == "-") for c in user_type):
            return None
        if not uid.isdigit() or not uid.isascii() or (len(uid) > 1 and uid.startswith("0")):
            return None
        n = int(uid)
        return (k, user_type, n) if n <= self.max_uid else None


def _cursor_text(at: Dict[str, Optional[int]]) -> str:
    """A reindex cursor as text (Rust: ReindexCursor's Display): 0, or <node>@<cursor>|done joined by ','."""
    if not at:
        return "0"
    return ",".join(f"{n}@{'done' if c is None else c}" for n, c in at.items())


def _cursor_of(s: str) -> Dict[str, Optional[int]]:
    """The nodes of a reindex cursor's text (Rust: ReindexCursor::from_str)."""
    if s == "0":
        return {}
    bad = _bad("reindex cursor", f"{s!r} is not 0 or <node>@<cursor>|done,...")
    out: Dict[str, Optional[int]] = {}
    for part in s.split(","):
        node, sep, at = part.rpartition("@")
        if not sep or not node or "@" in node:
            raise bad
        if at == "done":
            out[node] = None
        elif at.isascii() and at.isdigit() and int(at) < 2 ** 64:
            out[node] = int(at)
        else:
            raise bad
    return out


_ = Set
