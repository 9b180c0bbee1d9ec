"""Stored layouts (src/layout.rs, lua/layout/claim.lua)."""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional

from .. import errors, scripts
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
