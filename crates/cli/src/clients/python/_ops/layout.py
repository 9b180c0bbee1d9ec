"""Stored layouts (src/layout.rs, lua/layout/claim.lua)."""

from __future__ import annotations

from typing import Callable, Dict, List, Mapping, Optional, Tuple

from .. import errors, scripts
from .._contract import key
from .._driver import Cmd, Op, text


def _describe(fields: Mapping[str, str]) -> str:
    """`shards=64, scheme=crc32, version=1` as the Rust crate prints a layout."""
    parts = [f"{k}={v}" for k, v in sorted(fields.items()) if k not in ("pattern", "version")]
    if "version" in fields:
        parts.append(f"version={fields['version']}")
    return ", ".join(parts)


class Layouts:
    @staticmethod
    def claim(meta_key: str, fields: Mapping[str, str]) -> Op[None]:
        pairs: List[str] = [x for k in sorted(fields) for x in (k, fields[k])]
        reply = yield scripts.Layout.claim(meta_key, pairs)
        stored = {text(reply[i]): text(reply[i + 1]) for i in range(0, len(reply) - 1, 2)}
        if stored != dict(fields):
            raise errors.LayoutMismatch(meta_key, _describe(stored), _describe(fields))

    @staticmethod
    def read(meta_key: str) -> Op[Optional[Dict[str, str]]]:
        reply = yield Cmd("HGETALL", meta_key)
        items = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
        stored = {text(k): text(v) for k, v in items}
        return stored or None

    @staticmethod
    def stored(pattern: str, base: str) -> Op[Tuple[str, Optional[Dict[str, str]]]]:
        """The meta key of the pattern's instance `base` (an empty base: InvalidArgument) and its stored layout (None: none)."""
        if not base:
            raise errors.InvalidArgument("base", "must not be empty", None)
        meta = key(pattern, "meta", base=base)
        return meta, (yield from Layouts.read(meta))

    @staticmethod
    def existing(pattern: str, base: str) -> Op[Tuple[str, Dict[str, str]]]:
        """As stored(), a missing layout raised (LayoutMissing)."""
        meta, stored = yield from Layouts.stored(pattern, base)
        if stored is None:
            raise errors.LayoutMissing(meta)
        return meta, stored


class LayoutClaim:
    """The layout of one instance of a pattern in its meta key: claimed by the instance's first
    write when it records its layout (the record_layout setting), or by claim_layout; every
    claim checks the stored layout against the instance's."""

    def __init__(self, meta_key: str, fields: Callable[[], Mapping[str, str]], on_first_write: bool) -> None:
        self.meta_key, self.fields, self.on_first_write = meta_key, fields, on_first_write
        self.claimed = False

    def before_write(self) -> Op[None]:
        """Before a write: the first one claims the layout when the instance records it."""
        if self.on_first_write and not self.claimed:
            yield from self.claim()

    def claim(self) -> Op[None]:
        yield from Layouts.claim(self.meta_key, self.fields())
        self.claimed = True
