"""The rolling sharded store of recent records (manifest: patterns[rolling])."""

import json

from . import scripts
from ._contract import CONSTANTS, DEFAULTS, key
from ._core import runner
from ._errors import InvalidArgument, ScriptError

_C, _D = CONSTANTS["rolling"], DEFAULTS["rolling"]


class Added:
    """What one add did: slot, generation, replaced, evicted, misses."""

    __slots__ = ("slot", "generation", "replaced", "evicted", "misses")

    def __init__(self, slot, generation, replaced, evicted, misses):
        self.slot, self.generation, self.replaced, self.evicted, self.misses = slot, generation, replaced, evicted, misses


class RollingStore:
    """The newest `limit` records of each logical key in a ring of
    ceil(limit / shard_size) + 1 hash shards; records are stored as JSON."""

    def __init__(self, client, limit, shard_size, ttl_ms, prefix=_D["prefix"], index_margin_ms=_D["index_margin_ms"]):
        if shard_size < 1:
            raise InvalidArgument("shard_size", "must be at least 1")
        if limit < shard_size:
            raise InvalidArgument("limit", f"must be at least shard_size ({shard_size}), got {limit}")
        self.shards = -(-limit // shard_size) + 1
        if self.shards > _C["max_shards"]:
            raise InvalidArgument("limit", f"limit / shard_size gives {self.shards} shards, at most {_C['max_shards']} are allowed")
        if not 1 <= ttl_ms <= _C["max_ttl_ms"] or ttl_ms + index_margin_ms > _C["max_ttl_ms"] or index_margin_ms < 0:
            raise InvalidArgument("ttl", f"ttl must be at least 1 ms and ttl plus the index margin at most {_C['max_ttl_ms']} ms")
        self._run = runner(client)
        self.limit, self.shard_size, self.ttl_ms, self.index_margin_ms, self.prefix = limit, shard_size, ttl_ms, index_margin_ms, prefix
        self._heads = {}

    @property
    def capacity(self):
        return self.shards * self.shard_size

    def meta_key(self, k):
        if not k or "{" in k or "}" in k:
            raise InvalidArgument("key", "must not be empty and must not contain '{' or '}'")
        return key("rolling", "meta", prefix=self.prefix, key=k)

    def _window(self, k, first, count):
        out = []
        for i in range(count):
            slot = (first + i) % self.shards
            out.append(key("rolling", "slot_hash", prefix=self.prefix, key=k, slot=slot))
            out.append(key("rolling", "slot_order", prefix=self.prefix, key=k, slot=slot))
        return out

    def _hashes(self, k):
        return [key("rolling", "slot_hash", prefix=self.prefix, key=k, slot=s) for s in range(self.shards)]

    def add(self, k, field, value):
        """Adds (or replaces) record `field` of logical key `k`, stored as json.dumps(value)."""
        return self._run(self._add(k, field, json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()))

    def _add(self, k, field, value):
        meta = self.meta_key(k)
        guess, windows = self._heads.get(k, 0), _C["windows"]
        for attempt in range(len(windows) + 1):
            if attempt < len(windows) and windows[attempt] < self.shards:
                first, count = guess, windows[attempt]
            else:
                first, count = 0, self.shards
            status, head, gen, evicted = yield scripts.Rolling.add(
                meta, self._window(k, first, count), first, self.shards, self.shard_size,
                field, value, self.ttl_ms, self.ttl_ms + self.index_margin_ms)
            self._heads[k] = head
            if status != 0:
                return Added(head, gen, status == 2, evicted, attempt)
            guess = head  # the head moved: retry from where it is now
        raise ScriptError("rolling.add", "the head was not found even with the whole ring passed")

    def get(self, k, field):
        """The newest value of record `field` (json.loads), or None."""
        return self._run(self._get(k, field))

    def _get(self, k, field):
        v = yield scripts.Rolling.get(self.meta_key(k), self._hashes(k), field)
        return None if v is None else json.loads(v)

    def recent(self, k, n):
        """The newest n records as (field, value), newest first."""
        return self._run(self._recent(k, n))

    def _recent(self, k, n):
        flat = yield scripts.Rolling.recent(self.meta_key(k), self._window(k, 0, self.shards), min(n, self.capacity))
        return [(flat[i].decode(), json.loads(flat[i + 1])) for i in range(0, len(flat), 2)]

    def len(self, k):
        """The number of fields in every shard of k."""
        return self._run(self._one(scripts.Rolling.len(self.meta_key(k), self._hashes(k))))

    def clear(self, k):
        """Deletes the index and every shard of k; the number of fields deleted."""
        return self._run(self._one(scripts.Rolling.clear(self.meta_key(k), self._window(k, 0, self.shards))))

    @staticmethod
    def _one(call):
        return (yield call)
