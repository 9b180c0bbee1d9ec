"""Bloom filters on plain bitmaps (manifest: patterns[bloom]): sized filters
(murmur3 double hashing in size-class blocks, created and opened with the same
layout as the Rust crate) and the PHP BloomFilter::JSHash bitmaps."""

from . import scripts
from ._contract import CONSTANTS, DEFAULTS, key
from ._core import Cmd, runner, text
from ._errors import BloomConfigMismatch, BloomMissing, InvalidArgument
from .hashing import bloom_params, format_p, jshash, sized_offsets

_C, _D = CONSTANTS["bloom"], DEFAULTS["bloom"]


def _name(name):
    if not name or "{" in name or "}" in name:
        raise InvalidArgument("filter name", "must not be empty and must not contain '{' or '}'")


class Bloom:
    """A sized filter: config <prefix>{<name>}, blocks <prefix>{<name>}:<j> (or
    <prefix>{<name>:<j>} with spread). Made by Bloom.create or Bloom.open."""

    def __init__(self, client, name, n, p, m, k, block_bits, spread, prefix, p_text=None):
        self._run = runner(client)
        self.name, self.n, self.p, self.m, self.k = name, n, p, m, k
        self.block_bits, self.spread, self.prefix = list(block_bits), spread, prefix
        self.p_text = format_p(p) if p_text is None else p_text
        self.config_key = key("bloom", "config", prefix=prefix, name=name)
        role = "block_spread" if spread else "block"
        self.block_keys = [key("bloom", role, prefix=prefix, name=name, j=j) for j in range(len(self.block_bits))]

    @classmethod
    def create(cls, client, name, expected, fp_rate, spread=_D["spread"], prefix=_D["prefix"], max_bits=None, max_block_bytes=None):
        """Creates the filter, or opens it when it exists with exactly these parameters
        (BloomConfigMismatch otherwise). On an asyncio client: a coroutine."""
        _name(name)
        m, k, blocks = bloom_params(expected, fp_rate, max_bits, max_block_bytes)
        bf = cls(client, name, expected, fp_rate, m, k, blocks, spread, prefix)
        return bf._run(bf._create())

    def _create_call(self):
        return scripts.Bloom.create(
            self.config_key, [] if self.spread else self.block_keys, self.m, self.k, self.n, self.p_text,
            ",".join(map(str, self.block_bits)), _C["scheme"], _C["scheme_version"], self.spread)

    def _init_blocks(self, create):
        replies = yield [scripts.Bloom.init_block(bk, bits, create) for bk, bits in zip(self.block_keys, self.block_bits)]
        for r in replies:
            if isinstance(r, Exception):
                raise r

    def _create(self):
        if not self.spread:
            yield self._create_call()
            return self
        exists = (yield Cmd("EXISTS", self.config_key)) == 1
        if not exists:
            try:
                yield from self._init_blocks(True)
            except BloomConfigMismatch:
                # Another creator finished first: open its filter.
                if (yield Cmd("EXISTS", self.config_key)) != 1:
                    raise
                exists = True
        yield self._create_call()
        if exists:
            yield from self._init_blocks(False)
        return self

    @classmethod
    def open(cls, client, name, prefix=_D["prefix"]):
        """Opens an existing filter from its config (BloomMissing when there is none)."""
        _name(name)
        run = runner(client)
        return run(cls._open(client, name, prefix))

    @classmethod
    def _open(cls, client, name, prefix):
        config = key("bloom", "config", prefix=prefix, name=name)
        raw = yield Cmd("HGETALL", config)
        cfg = {text(a): text(b) for a, b in (raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2]))}
        if not cfg:
            raise BloomMissing(None, f"no config hash {config}")
        if cfg.get("scheme") != _C["scheme"] or cfg.get("version") != str(_C["scheme_version"]):
            raise BloomConfigMismatch(None, f"scheme stored {cfg.get('scheme')} v{cfg.get('version')}")
        blocks = [int(b) for b in cfg["block_bits"].split(",")]
        bf = cls(client, name, int(cfg["n"]), float(cfg["p"]), int(cfg["m"]), int(cfg["k"]), blocks, cfg["spread"] == "1", prefix, cfg["p"])
        sentinels = yield [Cmd("GETBIT", bk, bits) for bk, bits in zip(bf.block_keys, bf.block_bits)]
        for bk, s in zip(bf.block_keys, sentinels):
            if s != 1:
                raise BloomMissing(None, f"block {bk} is missing or lost its sentinel bit")
        return bf

    def locate(self, item):
        """(block, offsets) of an item."""
        return sized_offsets(item, self.block_bits, self.k)

    def _items(self, items, add):
        per_call = max(1, _C["chunk_offsets"] // self.k)
        groups = {}
        for i, item in enumerate(items):
            block, offsets = self.locate(item)
            groups.setdefault(block, []).append((i, offsets))
        calls, owners = [], []
        for block in sorted(groups):
            g = groups[block]
            for at in range(0, len(g), per_call):
                part = g[at:at + per_call]
                offsets = [o for _, offs in part for o in offs]
                fn = scripts.Bloom.add if add else scripts.Bloom.exists
                calls.append(fn(self.block_keys[block], self.block_bits[block], self.k, offsets))
                owners.append([i for i, _ in part])
        replies = yield calls
        out = [False] * len(items)
        for owner, reply in zip(owners, replies):
            if isinstance(reply, Exception):
                raise reply
            for i, flag in zip(owner, reply):
                out[i] = flag == 1
        return out

    def multi_add(self, items):
        """Adds items; per item True when newly added."""
        return self._run(self._items(list(items), True))

    def multi_exists(self, items):
        """Per item True when it may be present."""
        return self._run(self._items(list(items), False))

    def add(self, item):
        return self._run(self._first(self._items([item], True)))

    def exists(self, item):
        return self._run(self._first(self._items([item], False)))

    @staticmethod
    def _first(op):
        return (yield from op)[0]


class JsHashBloom:
    """A bitmap of the PHP BloomFilter::JSHash recipe: one bit per item at JSHash(item)."""

    def __init__(self, client, bitmap_key, limit_memory=_D["limit_memory"]):
        if not bitmap_key:
            raise InvalidArgument("key", "must not be empty")
        self._run = runner(client)
        self.key = key("bloom", "bitmap", key=bitmap_key)
        self.limit_memory = limit_memory

    def offset(self, item):
        if len(item) == 0:
            raise InvalidArgument("item", "must not be empty in a JSHash filter")
        return jshash(item, self.limit_memory)

    def _op(self, fn, items):
        offsets = [self.offset(i) for i in items]
        if not offsets:
            return []
        return [f == 1 for f in (yield fn(self.key, offsets))]

    def multi_add(self, items):
        return self._run(self._op(scripts.Bloom.jshash_add, list(items)))

    def multi_exists(self, items):
        return self._run(self._op(scripts.Bloom.jshash_exists, list(items)))

    def add(self, item):
        return self._run(Bloom._first(self._op(scripts.Bloom.jshash_add, [item])))

    def exists(self, item):
        return self._run(Bloom._first(self._op(scripts.Bloom.jshash_exists, [item])))
