"""Fixed-width records per integer id in sharded strings (manifest: patterns[packed])."""

from . import scripts
from ._contract import CONSTANTS, DEFAULTS, key
from ._core import Cmd, request_key, runner
from ._errors import InvalidArgument
from .sharded_hash import IdOutOfRange

_C, _D = CONSTANTS["packed"], DEFAULTS["packed"]


class PackedRecords:
    """Records of `width` bytes for ids 0..max_id at (id % ids_per_shard) * width of
    <base>:<id // ids_per_shard>; never written records read as zero bytes."""

    def __init__(self, client, base, width, max_id, ids_per_shard=None, dense=_D["dense"]):
        if not base:
            raise InvalidArgument("base", "must not be empty")
        if not 1 <= width <= _C["max_shard_bytes"]:
            raise InvalidArgument("width", "must be at least 1 byte")
        ids = max(1, _C["default_shard_bytes"] // width) if ids_per_shard is None else ids_per_shard
        if ids < 1 or ids * width > _C["max_shard_bytes"]:
            raise InvalidArgument("ids per shard", f"{ids} records of {width} bytes exceed the string limit")
        self._run = runner(client)
        self.base, self.width, self.max_id, self.ids_per_shard, self.dense = base, width, max_id, ids, dense

    def locate(self, id_):
        """(shard key, byte offset) of an id."""
        if not 0 <= id_ <= self.max_id:
            raise IdOutOfRange(f"id {id_} is above the configured maximum {self.max_id}")
        return key("packed", "shard", base=self.base, shard=id_ // self.ids_per_shard), (id_ % self.ids_per_shard) * self.width

    def _reserve(self):
        return self.ids_per_shard * self.width if self.dense else 0

    def get(self, id_):
        k, off = self.locate(id_)
        return self._run(self._get(k, off))

    def _get(self, k, off):
        raw = yield Cmd("GETRANGE", k, off, off + self.width - 1)
        return bytes(raw).ljust(self.width, b"\0")

    def set_many(self, items):
        """Writes (id, record bytes) pairs: one packed.put per shard."""
        return self._run(self._set_many(list(items)))

    def _set_many(self, items):
        by_shard = {}
        for id_, rec in items:
            if len(rec) != self.width:
                raise InvalidArgument("record", f"is {len(rec)} bytes, the width is {self.width}")
            k, off = self.locate(id_)
            by_shard.setdefault(k, []).extend([str(off), bytes(rec)])
        replies = yield [scripts.Packed.put(k, self._reserve(), v) for k, v in sorted(by_shard.items())]
        for r in replies:
            if isinstance(r, Exception):
                raise r

    def set(self, id_, record):
        return self.set_many([(id_, record)])

    def add(self, id_, offset, size, signed, delta):
        """Adds delta to the little-endian integer field (offset, size, signed) of a record."""
        if not 1 <= size <= 6 or offset + size > self.width:
            raise InvalidArgument("field", f"bytes {offset}..{offset + size} lie outside the {self.width}-byte record")
        k, off = self.locate(id_)
        call = scripts.Packed.add(k, request_key(k), self._reserve(), off + offset, size, signed, delta, 0)
        return self._run(self._one(call))

    def add_once(self, id_, offset, size, signed, delta, request_id, ttl_ms=3_600_000):
        """add at most once per request id: a call with the same id returns the first result."""
        if not 1 <= size <= 6 or offset + size > self.width:
            raise InvalidArgument("field", f"bytes {offset}..{offset + size} lie outside the {self.width}-byte record")
        k, off = self.locate(id_)
        call = scripts.Packed.add(k, request_key(k, request_id), self._reserve(), off + offset, size, signed, delta, ttl_ms)
        return self._run(self._one(call))

    def compare_and_set(self, id_, expected, new):
        """(True, previous) when written, (False, current) when it held something else."""
        k, off = self.locate(id_)
        return self._run(self._cas(k, off, bytes(expected), bytes(new)))

    def _cas(self, k, off, expected, new):
        done, current = yield scripts.Packed.swap(k, self._reserve(), off, expected, new)
        return done == 1, bytes(current)

    @staticmethod
    def _one(req):
        return (yield req)
