"""The input checks the generated classes run before anything is sent, one per
type of the API description: each refuses a bad input with InvalidArgument
(nothing sent, nothing written) and returns the input normalized (bytes for
bytes, a datetime.date for a date)."""

from __future__ import annotations

import dataclasses
import datetime
import json as _json
import math
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar

from .errors import InvalidArgument

T = TypeVar("T")
U = TypeVar("U")

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _bad(name: str, reason: str) -> InvalidArgument:
    return InvalidArgument(name, reason, None)


def text(name: str, v: object) -> str:
    if not isinstance(v, str):
        raise _bad(name, f"must be a str, got {type(v).__name__}")
    return v


def name(what: str, v: object) -> str:
    s = text(what, v)
    if not s or "{" in s or "}" in s:
        raise _bad(what, "must not be empty and must not contain '{' or '}'")
    return s


def token(what: str, v: object) -> str:
    s = text(what, v)
    if not s:
        raise _bad(what, "must not be empty")
    return s


def prefix(what: str, v: object) -> str:
    s = text(what, v)
    if "{" in s or "}" in s:
        raise _bad(what, "must not contain '{' or '}'")
    return s


def bytes_(what: str, v: object) -> bytes:
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    raise _bad(what, f"must be a str or bytes, got {type(v).__name__}")


def int_(what: str, v: object, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(what, f"must be an integer, got {type(v).__name__}")
    if v < lo or v > hi:
        raise _bad(what, f"must be from {lo} to {hi}, got {v}")
    return v


def float_(what: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _bad(what, "must be a finite number")
    return float(v)


def bool_(what: str, v: object) -> bool:
    if not isinstance(v, bool):
        raise _bad(what, f"must be True or False, got {type(v).__name__}")
    return v


def date(what: str, v: object) -> datetime.date:
    """A calendar day: a datetime.date (not a datetime) or 'YYYY-MM-DD'."""
    if isinstance(v, datetime.datetime):
        raise _bad(what, "must be a date, not a datetime (take .date() in the zone you mean)")
    if isinstance(v, datetime.date):
        return v
    if isinstance(v, str) and _DATE.match(v):
        try:
            return datetime.date.fromisoformat(v)
        except ValueError:
            pass
    raise _bad(what, f"must be a datetime.date or 'YYYY-MM-DD', got {v!r}")


def json(what: str, v: object) -> Any:
    try:
        _json.dumps(v)
    except (TypeError, ValueError) as e:
        raise _bad(what, f"must be JSON: {e}") from None
    return v


def enum(what: str, v: object, words: Tuple[str, ...]) -> Any:
    if v not in words:
        raise _bad(what, f"must be one of {', '.join(words)}, got {v!r}")
    return v


def opt(v: Optional[object], each: Callable[[object], T]) -> Optional[T]:
    return None if v is None else each(v)


def list_(what: str, v: object, each: Callable[[object], T]) -> List[T]:
    if isinstance(v, (str, bytes, bytearray, Mapping)) or not hasattr(v, "__iter__"):
        raise _bad(what, "must be a list")
    return [each(x) for x in v]  # type: ignore[attr-defined,unused-ignore]


def pair(what: str, v: object, first: Callable[[object], T], second: Callable[[object], U]) -> Tuple[T, U]:
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        raise _bad(what, "must be pairs")
    return first(v[0]), second(v[1])


def mapping(what: str, v: object, key: Callable[[object], T], value: Callable[[object], U]) -> Dict[T, U]:
    if not isinstance(v, Mapping):
        raise _bad(what, "must be a mapping")
    return {key(k): value(x) for k, x in v.items()}


def record(what: str, v: object, cls: Type[T]) -> T:
    """An instance of the record class, or a mapping of its fields."""
    if isinstance(v, cls):
        return v
    if isinstance(v, Mapping):
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        if set(v) == names:
            return cls(**v)
    raise _bad(what, f"must be a {cls.__name__}")
