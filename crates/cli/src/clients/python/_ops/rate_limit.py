"""The rate limiters' operations (src/rate_limit, lua/rate_limit)."""

from __future__ import annotations

from typing import List, Optional

from .. import errors, records, scripts
from .._contract import key
from .._checks import name as _name
from .._driver import Cmd, Op

_MAX_TOLERANCE_US = 10 ** 15


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def _decision(reply: List[int]) -> records.Decision:
    limited, limit, remaining, retry, reset = (int(x) for x in reply)
    return records.Decision(limited == 1, limit, remaining, None if retry == -1 else retry, reset)


class RateLimiter:
    def __init__(self, kind: str, limit: int, window_ms: int, max_burst: int, count_per_period: int, period_ms: int,
                 prefix: str) -> None:
        self.kind, self.prefix = kind, prefix
        if kind == "gcra":
            if not 0 <= max_burst <= 999_999_999:
                raise _bad("max_burst", "must be from 0 to 999999999")
            if not 1 <= count_per_period <= 999_999_999:
                raise _bad("count_per_period", "must be from 1 to 999999999")
            if not 1 <= period_ms <= 999_999_999_999:
                raise _bad("period", "must be from 1 to 999999999999 ms")
            if count_per_period > period_ms * 1000:
                raise _bad("count_per_period", f"must be at most one per microsecond of the period ({period_ms * 1000})")
            interval = -(-period_ms * 1000 // count_per_period)
            if interval * (max_burst + 1) > _MAX_TOLERANCE_US:
                raise _bad("max_burst", "(max_burst + 1) emission intervals must not exceed 10^15 microseconds")
            self.gcra = (max_burst, count_per_period, period_ms)
            self.window = (0, 0)
            self.max_quantity = max_burst + 1
        else:
            most = 1_000_000 if kind == "sliding_counter" else 100_000
            longest = 2_592_000_000 if kind == "sliding_counter" else 999_999_999_999
            if not 1 <= limit <= most:
                raise _bad("limit", f"must be from 1 to {most}")
            if not 1 <= window_ms <= longest:
                raise _bad("window", f"must be from 1 to {longest} ms")
            self.gcra = (0, 0, 0)
            self.window = (limit, window_ms)
            self.max_quantity = limit

    def __repr__(self) -> str:
        return f"kind={self.kind!r}, prefix={self.prefix!r}"

    def key(self, subject: str) -> str:
        role = {"gcra": "tat", "sliding_counter": "counter", "sliding_log": "log"}[self.kind]
        return key("rate_limit", role, prefix=self.prefix, subject=_name("subject", subject))

    def throttle(self, subject: str, quantity: int) -> Op[records.Decision]:
        k = self.key(subject)
        if quantity > self.max_quantity:
            raise _bad("quantity", f"must be at most {self.max_quantity}, the most one call may take")
        (burst, count, period), (limit, window) = self.gcra, self.window
        if self.kind == "gcra":
            call = scripts.RateLimit.throttle(k, burst, count, period, quantity, [])
        elif self.kind == "sliding_counter":
            call = scripts.RateLimit.window_counter(k, limit, window, quantity, [])
        else:
            call = scripts.RateLimit.window_log(k, limit, window, quantity, [])
        return _decision((yield call))

    def peek(self, subject: str) -> Op[records.Decision]:
        return (yield from self.throttle(subject, 0))

    def reset(self, subject: str) -> Op[Optional[bool]]:
        k = self.key(subject)
        return int((yield Cmd("DEL", k))) > 0

    @staticmethod
    def throttle_once(subject: str, max_burst: int, count_per_period: int, period_ms: int, quantity: int) -> Op[records.Decision]:
        limiter = RateLimiter("gcra", 0, 0, max_burst, count_per_period, period_ms, "rate:")
        return (yield from limiter.throttle(subject, quantity))

    @staticmethod
    def allow_once_per(subject: str, interval_ms: int) -> Op[records.Decision]:
        limiter = RateLimiter("gcra", 0, 0, 0, 1, interval_ms, "rate:")
        return (yield from limiter.throttle(subject, 1))
