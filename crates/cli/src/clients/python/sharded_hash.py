"""Hashes that stay listpack-encoded, in shards <base><separator><shard>, <base>:<shard> by default
(manifest: patterns[sharded_hash])."""

from . import scripts
from ._contract import DEFAULTS, key
from ._core import Cmd, request_key, runner
from ._errors import InvalidArgument, RedisPatternsError
from .hashing import crc32

_D = DEFAULTS["sharded_hash"]


class ListpackValueTooLong(RedisPatternsError):
    """A field or value is longer than max_value in a strict hash; nothing was sent."""


class IdOutOfRange(RedisPatternsError):
    """An id is above the configured maximum; nothing was sent."""


def _bytes(v):
    return v.encode() if isinstance(v, str) else bytes(v)


class ShardedHash:
    """A logical hash `base`: crc32(field) % shards (shards=...) or id / fields_per_shard
    (fields_per_shard=..., max_id=...)."""

    def __init__(self, client, base, shards=None, fields_per_shard=None, max_id=None, strict=_D["strict"],
                 max_entries=_D["max_entries"], max_value=_D["max_value"], separator=_D["separator"]):
        if not base:
            raise InvalidArgument("base", "must not be empty")
        if not separator:
            raise InvalidArgument("separator", "must not be empty")
        if "{" in separator or "}" in separator:
            raise InvalidArgument("separator", "must not contain '{' or '}' (shard keys carry no hash tag)")
        if (shards is None) == (fields_per_shard is None):
            raise InvalidArgument("sharding", "give shards or fields_per_shard (with max_id)")
        if shards is not None and shards < 1:
            raise InvalidArgument("shard count", "must be at least 1")
        if fields_per_shard is not None and (fields_per_shard < 1 or max_id is None):
            raise InvalidArgument("fields per shard", "must be at least 1, with max_id")
        self._run = runner(client)
        self.base, self.shards, self.fields_per_shard, self.max_id = base, shards, fields_per_shard, max_id
        self.strict, self.max_entries, self.max_value = strict, max_entries, max_value
        self.separator = separator

    def shard_of(self, field):
        field = _bytes(field)
        if self.shards is not None:
            return crc32(field) % self.shards
        s = field.decode(errors="replace")
        if not s.isdigit() or not s.isascii() or (len(s) > 1 and s[0] == "0"):
            raise InvalidArgument("field", f"{s!r} is not a decimal integer id")
        if int(s) > self.max_id:
            raise IdOutOfRange(f"id {s} is above the configured maximum {self.max_id}")
        return int(s) // self.fields_per_shard

    def shard_key(self, field):
        return key("sharded_hash", "shard", base=self.base, separator=self.separator, shard=self.shard_of(field))

    def _check(self, field, value):
        if self.strict:
            for what, v in (("field", field), ("value", value)):
                if len(v) > self.max_value:
                    raise ListpackValueTooLong(f"{what} of {len(v)} bytes exceeds hash-max-listpack-value {self.max_value}")

    def _write(self, pairs, only_absent):
        by_shard = {}
        for f, v in pairs:
            f, v = _bytes(f), _bytes(v)
            self._check(f, v)
            by_shard.setdefault(self.shard_of(f), []).append((f, v))
        batch = []
        for shard in sorted(by_shard):
            k = key("sharded_hash", "shard", base=self.base, separator=self.separator, shard=shard)
            ps = by_shard[shard]
            if self.strict:
                batch.append(scripts.ShardedHash.put(k, only_absent, self.max_entries, [x for p in ps for x in p]))
            elif only_absent:
                batch.extend(Cmd("HSETNX", k, f, v) for f, v in ps)
            else:
                batch.append(Cmd("HSET", k, *[x for p in ps for x in p]))
        replies = yield batch
        for r in replies:
            if isinstance(r, Exception):
                raise r
        return sum(replies)

    def set(self, field, value):
        """Sets a field; True when it was new."""
        return self._run(self._flag(self._write([(field, value)], False)))

    def set_if_absent(self, field, value):
        return self._run(self._flag(self._write([(field, value)], True)))

    def set_many(self, pairs):
        """Sets many fields (one write per shard); the number that were new."""
        return self._run(self._write(list(pairs), False))

    @staticmethod
    def _flag(op):
        return (yield from op) == 1

    def get(self, field):
        return self._run(self._one(Cmd("HGET", self.shard_key(field), _bytes(field))))

    def get_many(self, fields):
        """The values of many fields, in order (None for absent ones): one HMGET per shard."""
        return self._run(self._get_many([_bytes(f) for f in fields]))

    def _get_many(self, fields):
        by_shard = {}
        for i, f in enumerate(fields):
            by_shard.setdefault(self.shard_of(f), []).append(i)
        shards = sorted(by_shard)
        replies = yield [Cmd("HMGET", key("sharded_hash", "shard", base=self.base, separator=self.separator, shard=s), *[fields[i] for i in by_shard[s]]) for s in shards]
        out = [None] * len(fields)
        for s, values in zip(shards, replies):
            for i, v in zip(by_shard[s], values):
                out[i] = v
        return out

    def incr(self, field, delta):
        """Adds delta to an integer field; not idempotent (after a lost reply its outcome is unknown)."""
        field = _bytes(field)
        self._check(field, b"")
        k = self.shard_key(field)
        if self.strict:
            return self._run(self._one(scripts.ShardedHash.incr(k, request_key(k), field, delta, self.max_entries, 0)))
        return self._run(self._one(Cmd("HINCRBY", k, field, delta)))

    def incr_once(self, field, delta, request_id, ttl_ms=3_600_000):
        """incr at most once per request id: a call with the same id returns the first result."""
        field = _bytes(field)
        self._check(field, b"")
        k = self.shard_key(field)
        max_entries = self.max_entries if self.strict else 0
        call = scripts.ShardedHash.incr(k, request_key(k, request_id), field, delta, max_entries, ttl_ms)
        return self._run(self._one(call))

    def len(self):
        n = self.shards if self.shards is not None else self.max_id // self.fields_per_shard + 1
        return self._run(self._len(n))

    def _len(self, n):
        return sum((yield [Cmd("HLEN", key("sharded_hash", "shard", base=self.base, separator=self.separator, shard=s)) for s in range(n)]))

    @staticmethod
    def _one(req):
        return (yield req)
