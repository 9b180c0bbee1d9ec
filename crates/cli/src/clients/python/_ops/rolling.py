"""The rolling store (src/rolling, lua/rolling): the add's retry when another
writer moved the head (the rolling retry protocol of the manifest)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from .. import errors, records, scripts
from .._contract import CONSTANTS, key
from .._checks import name as _name
from .._driver import Op, text

MAX_SHARDS = 65_536
#: The longest TTL the scripts accept (ttl plus the index margin), from the contract.
MAX_TTL_MS: int = CONSTANTS["rolling"]["max_ttl_ms"]


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


class RollingStore:
    def __init__(self, limit: int, shard_size: int, ttl_ms: int, prefix: str, index_margin_ms: int) -> None:
        if shard_size < 1:
            raise _bad("shard_size", "must be at least 1")
        if limit < shard_size:
            raise _bad("limit", f"must be at least shard_size ({shard_size}), got {limit}")
        self.shards = -(-limit // shard_size) + 1
        if self.shards > MAX_SHARDS:
            raise _bad("limit", f"limit / shard_size gives {self.shards} shards, at most {MAX_SHARDS} are allowed")
        if ttl_ms + index_margin_ms > MAX_TTL_MS:
            raise _bad("ttl", f"ttl plus the index margin must be at most {MAX_TTL_MS} ms")
        self.limit, self.shard_size, self.ttl_ms, self.margin_ms, self.prefix = limit, shard_size, ttl_ms, index_margin_ms, prefix
        self.capacity = self.shards * shard_size
        self._heads: Dict[str, int] = {}

    def __repr__(self) -> str:
        return f"limit={self.limit}, shard_size={self.shard_size}, ttl_ms={self.ttl_ms}"

    def meta_key(self, k: str) -> str:
        return key("rolling", "meta", prefix=self.prefix, key=_name("key", k))

    def _window(self, k: str, first: int, count: int) -> List[str]:
        out: List[str] = []
        for i in range(count):
            slot = (first + i) % self.shards
            out.append(key("rolling", "slot_hash", prefix=self.prefix, key=k, slot=slot))
            out.append(key("rolling", "slot_order", prefix=self.prefix, key=k, slot=slot))
        return out

    def _hashes(self, k: str) -> List[str]:
        return [key("rolling", "slot_hash", prefix=self.prefix, key=k, slot=s) for s in range(self.shards)]

    def add(self, k: str, field: str, value: Any) -> Op[records.Added]:
        meta = self.meta_key(k)
        encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        guess = self._heads.get(k, 0)
        windows: List[int] = list(CONSTANTS["rolling"]["windows"])
        for attempt in range(len(windows) + 1):
            if attempt < len(windows) and windows[attempt] < self.shards:
                first, count = guess, windows[attempt]
            else:
                first, count = 0, self.shards
            status, head, gen, evicted = (int(x) for x in (yield scripts.Rolling.add(
                meta, self._window(k, first, count), first, self.shards, self.shard_size, field, encoded,
                self.ttl_ms, self.ttl_ms + self.margin_ms)))
            self._heads[k] = head
            if status != 0:
                return records.Added(head, gen, status == 2, evicted, attempt)
            guess = head
            if count == self.shards:
                break
        raise errors.UnexpectedReply("rolling.add found no head even with the whole ring passed")

    def get(self, k: str, field: str) -> Op[Optional[Any]]:
        v = yield scripts.Rolling.get(self.meta_key(k), self._hashes(k), field)
        return None if v is None else json.loads(v)

    def recent(self, k: str, n: int) -> Op[List[Tuple[str, Any]]]:
        flat = yield scripts.Rolling.recent(self.meta_key(k), self._window(k, 0, self.shards), min(n, self.capacity))
        return [(text(flat[i]), json.loads(flat[i + 1])) for i in range(0, len(flat), 2)]

    def len(self, k: str) -> Op[int]:
        return int((yield scripts.Rolling.len(self.meta_key(k), self._hashes(k))))

    def clear(self, k: str) -> Op[Optional[int]]:
        return int((yield scripts.Rolling.clear(self.meta_key(k), self._window(k, 0, self.shards))))
