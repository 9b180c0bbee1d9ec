"""Bloom filters on plain bitmaps (src/bloom, lua/bloom): sized filters and the
PHP JSHash bitmap."""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import errors, records, scripts
from .._contract import CONSTANTS, key, render
from .._driver import Cmd, Op, Request, each, text
from ..hashing import bloom_params, format_p, jshash, sized_offsets

_C = CONSTANTS["bloom"]
KEY_OVERHEAD = 256


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def _config_taken(name: str, config_key: str, exc: BaseException) -> BaseException:
    """The config key of filter `name` holding another type (WRONGTYPE) is, when `name`
    ends in `:<j>`, block j of the spread filter before it: refused naming both."""
    base, _, j = name.rpartition(":")
    if base and j.isdigit() and isinstance(exc, errors.Server) and exc.code == "WRONGTYPE":
        return errors.BloomConfigMismatch(render(_C["config_holds_block"], key=config_key, name=name, j=j, base=base))
    return exc


def _read_config(name: str, config_key: str) -> Op[Dict[str, str]]:
    try:
        raw = yield Cmd("HGETALL", config_key)
    except errors.Server as e:
        raise _config_taken(name, config_key, e) from None
    return _config(raw)


def _item(item: bytes) -> bytes:
    if len(item) > 512 * 1024 * 1024:
        raise _bad("item", "must be at most 512 MiB")
    return item


class Bloom:
    def __init__(self, name: str, prefix: str, params: records.BloomParams, spread: bool, p_text: str) -> None:
        self.name, self.prefix, self.params, self.spread, self.p_text = name, prefix, params, spread, p_text
        self.config_key = key("bloom", "config", prefix=prefix, name=name)
        role = "block_spread" if spread else "block"
        self.block_keys = [key("bloom", role, prefix=prefix, name=name, j=j) for j in range(len(params.block_bits))]

    def __repr__(self) -> str:
        return f"name={self.name!r}, params={self.params!r}"

    def _create_call(self) -> Request:
        p = self.params
        return scripts.Bloom.create(self.config_key, [] if self.spread else self.block_keys, p.m, p.k, p.n, self.p_text,
                                    ",".join(map(str, p.block_bits)), _C["scheme"], _C["scheme_version"], self.spread)

    def _init_blocks(self, create: bool) -> Op[List[object]]:
        replies = yield [scripts.Bloom.init_block(k, b, create) for k, b in zip(self.block_keys, self.params.block_bits)]
        return [self._block_taken(j, r) for j, r in enumerate(replies)]

    def _block_taken(self, j: int, reply: object) -> object:
        """Block j of a spread filter holding another type (WRONGTYPE) is the config of
        the filter `<name>:<j>`: refused naming both."""
        if self.spread and isinstance(reply, errors.Server) and reply.code == "WRONGTYPE":
            return errors.BloomConfigMismatch(render(_C["block_is_config"], key=self.block_keys[j], j=j, name=self.name))
        return reply

    @staticmethod
    def create(name: str, expected: int, fp_rate: float, prefix: str, spread_blocks: bool, max_memory: int) -> Op["Bloom"]:
        m, k, blocks = bloom_params(expected, fp_rate)
        bf = Bloom(name, prefix, records.BloomParams(expected, fp_rate, m, k, blocks), spread_blocks, format_p(fp_rate))
        needed = sum(-(-(b + 1) // 8) + KEY_OVERHEAD for b in blocks) + KEY_OVERHEAD
        cfg = yield from _read_config(name, bf.config_key)
        if cfg:
            stored = Bloom._from_config(name, prefix, cfg)
            want = bf.params
            have = stored.params
            for field, a, b in (("n", have.n, want.n), ("p", stored.p_text, bf.p_text), ("m/k", (have.m, have.k), (want.m, want.k)),
                                ("spread", int(stored.spread), int(spread_blocks))):
                if a != b:
                    raise errors.BloomConfigMismatch(f"{field} stored {a} requested {b}")
            yield stored._create_call()
            if stored.spread:
                each((yield from stored._init_blocks(False)))
            return stored
        if needed > max_memory:
            raise errors.NotEnoughMemory(f"bloom filter {name}", needed, max_memory, "ceiling", None)
        if not spread_blocks:
            yield bf._create_call()
            return bf
        replies = yield from bf._init_blocks(True)
        failed = next((r for r in replies if isinstance(r, BaseException)), None)
        if failed is not None:
            created = [k for k, r in zip(bf.block_keys, replies) if r == 1]
            if created:
                each((yield [Cmd("DEL", k) for k in created]))
            raise failed
        yield bf._create_call()
        return bf

    @staticmethod
    def _from_config(name: str, prefix: str, cfg: Dict[str, str]) -> "Bloom":
        config = key("bloom", "config", prefix=prefix, name=name)
        if cfg.get("scheme") != _C["scheme"] or cfg.get("version") != str(_C["scheme_version"]):
            raise errors.BloomConfigMismatch(f"scheme stored {cfg.get('scheme')} v{cfg.get('version')} requested "
                                             f"{_C['scheme']} v{_C['scheme_version']}")
        try:
            blocks = [int(b) for b in cfg["block_bits"].split(",")]
            params = records.BloomParams(int(cfg["n"]), float(cfg["p"]), int(cfg["m"]), int(cfg["k"]), blocks)
            return Bloom(name, prefix, params, cfg["spread"] == "1", cfg["p"])
        except (KeyError, ValueError):
            raise errors.BloomConfigMismatch(f"{config} is not understood") from None

    @staticmethod
    def open(name: str, prefix: str) -> Op["Bloom"]:
        config = key("bloom", "config", prefix=prefix, name=name)
        cfg = yield from _read_config(name, config)
        if not cfg:
            raise errors.BloomMissing(f"no config hash {config}")
        bf = Bloom._from_config(name, prefix, cfg)
        sentinels = each((yield [Cmd("GETBIT", k, b) for k, b in zip(bf.block_keys, bf.params.block_bits)]))
        for k, s in zip(bf.block_keys, sentinels):
            if int(s) != 1:
                raise errors.BloomMissing(f"block {k} is missing or lost its sentinel bit")
        return bf

    def locate(self, item: bytes) -> Tuple[int, List[int]]:
        return sized_offsets(item, self.params.block_bits, self.params.k)

    def _items(self, items: Sequence[bytes], add: bool) -> Op[List[bool]]:
        per_call = max(1, _C["chunk_offsets"] // self.params.k)
        groups: Dict[int, List[Tuple[int, List[int]]]] = {}
        for i, item in enumerate(items):
            block, offsets = self.locate(_item(item))
            groups.setdefault(block, []).append((i, offsets))
        calls: List[Request] = []
        owners: List[List[int]] = []
        for block in sorted(groups):
            g = groups[block]
            for at in range(0, len(g), per_call):
                part = g[at:at + per_call]
                offsets = [o for _, offs in part for o in offs]
                fn = scripts.Bloom.add if add else scripts.Bloom.exists
                calls.append(fn(self.block_keys[block], self.params.block_bits[block], self.params.k, offsets))
                owners.append([i for i, _ in part])
        out = [False] * len(items)
        if not calls:
            return out
        for owner, reply in zip(owners, each((yield calls))):
            for i, flag in zip(owner, reply):
                out[i] = int(flag) == 1
        return out

    # Whether an add was new is never unknown here: redis-py does not say
    # when it sent a command again (Optional as in the description).
    def add(self, item: bytes) -> Op[Optional[bool]]:
        return (yield from self._items([item], True))[0]

    def exists(self, item: bytes) -> Op[bool]:
        return (yield from self._items([item], False))[0]

    def multi_add(self, items: Sequence[bytes]) -> Op[List[Optional[bool]]]:
        return [f for f in (yield from self._items(items, True))]

    def multi_exists(self, items: Sequence[bytes]) -> Op[List[bool]]:
        return (yield from self._items(items, False))

    def bits_set(self) -> Op[List[int]]:
        batch: List[Request] = []
        for k, b in zip(self.block_keys, self.params.block_bits):
            batch += [Cmd("BITCOUNT", k), Cmd("GETBIT", k, b)]
        got = [int(x) for x in each((yield batch))]
        for j in range(len(self.block_keys)):
            if got[2 * j + 1] != 1:
                raise errors.BloomMissing(f"block {self.block_keys[j]} is missing or lost its sentinel bit")
        return [got[2 * j] - 1 for j in range(len(self.block_keys))]

    def _estimate(self, bits_set: List[int]) -> int:
        k = float(self.params.k)
        total = 0.0
        for x, bits in zip(bits_set, self.params.block_bits):
            total += -(bits / k) * math.log(1.0 - min(x, bits - 1) / bits)
        return int(math.floor(total + 0.5))

    def approx_count(self) -> Op[int]:
        return self._estimate((yield from self.bits_set()))

    def info(self) -> Op[records.BloomInfo]:
        bits_set = yield from self.bits_set()
        total = sum(self.params.block_bits)
        fp = sum((b / total) * (x / b) ** self.params.k for x, b in zip(bits_set, self.params.block_bits))
        return records.BloomInfo(self.name, self.config_key, list(self.block_keys), self.params, bits_set,
                                 self._estimate(bits_set), fp)

    def clear(self) -> Op[None]:
        bits = list(self.params.block_bits)
        if self.spread:
            each((yield [scripts.Bloom.clear([k], [b]) for k, b in zip(self.block_keys, bits)]))
        else:
            yield scripts.Bloom.clear(self.block_keys, bits)

    def load(self, items: Sequence[Optional[bytes]], batch: int, start: int) -> Op[records.LoadProgress]:
        return (yield from _load(self.multi_add, items, batch, start))

    def destroy(self) -> Op[None]:
        keys = [self.config_key, *self.block_keys]
        if self.spread:
            each((yield [Cmd("DEL", k) for k in keys]))
        else:
            yield Cmd("DEL", *keys)


def _load(multi_add: Callable[[Sequence[bytes]], Op[List[Optional[bool]]]], items: Sequence[Optional[bytes]],
          batch: int, start: int) -> Op[records.LoadProgress]:
    """A bulk load (Rust: Load::into_op): batches of `batch` items, one multi_add each, after `start` skipped positions."""
    if batch == 0:
        raise _bad("batch size", "must be at least 1")
    done = min(start, len(items))
    added = unknown = 0
    while done < len(items):
        buf: List[bytes] = []
        at = done
        while at < len(items) and len(buf) < batch:
            item = items[at]
            if item is not None:
                buf.append(item)
            at += 1
        flags = (yield from multi_add(buf)) if buf else []
        done = at
        added += sum(1 for f in flags if f is True)
        unknown += sum(1 for f in flags if f is None)
    return records.LoadProgress(done, added, unknown)


def _config(raw: object) -> Dict[str, str]:
    items = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2])  # type: ignore[index]
    return {text(a): text(b) for a, b in items}


class JsHashBloom:
    def __init__(self, key_: str, prefix: str, limit_memory: bool) -> None:
        if not key_:
            raise _bad("key", "must not be empty")
        self.key = prefix + key_
        self.limit_memory = limit_memory

    def __repr__(self) -> str:
        return f"key={self.key!r}, limit_memory={self.limit_memory}"

    def offset(self, item: bytes) -> int:
        if len(item) == 0:
            raise _bad("item", "must not be empty in a JSHash filter")
        return jshash(item, self.limit_memory)

    def multi_add(self, items: Sequence[bytes]) -> Op[List[Optional[bool]]]:
        offsets = [self.offset(i) for i in items]
        if not offsets:
            return []
        return [int(f) == 1 for f in (yield scripts.Bloom.jshash_add(self.key, offsets))]

    def multi_exists(self, items: Sequence[bytes]) -> Op[List[bool]]:
        offsets = [self.offset(i) for i in items]
        if not offsets:
            return []
        return [int(f) == 1 for f in (yield scripts.Bloom.jshash_exists(self.key, offsets))]

    def add(self, item: bytes) -> Op[Optional[bool]]:
        return (yield from self.multi_add([item]))[0]

    def exists(self, item: bytes) -> Op[bool]:
        return (yield from self.multi_exists([item]))[0]

    def load(self, items: Sequence[Optional[bytes]], batch: int, start: int) -> Op[records.LoadProgress]:
        return (yield from _load(self.multi_add, items, batch, start))


_ = Optional
