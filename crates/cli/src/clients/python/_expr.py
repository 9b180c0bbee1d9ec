"""Set expressions over event bitmaps (src/analytics/expr.rs, compile.rs, eval.rs): the JSON form read and
checked, compiled to the BITOP program analytics.query runs (AND, OR, XOR only: the same result on every
server), or evaluated client-side over fetched bitmaps (a cluster where they are in several slots)."""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import errors

MAX_LEAVES = 1000
MAX_AT_LEAST = 32
LABEL = re.compile(r"^(H:\d{4}-\d{2}-\d{2}T\d{2}|D:\d{4}-\d{2}-\d{2}|W:\d{4}-W\d{2}|M:\d{4}-\d{2}|Y:\d{4}|U)$")
NARY = ("and", "or", "xor", "one")

#: A checked node: ("event", key), (op, [nodes]) for NARY, ("not", node), ("diff", [first, minus...]),
#: ("at_least", n, [nodes]).
Node = Tuple[Any, ...]


def _bad(why: str) -> errors.InvalidArgument:
    return errors.InvalidArgument("expression", why, None)


def _list(v: Any, op: str, key_of: Callable[[str, str], str], leaves: List[str]) -> List[Node]:
    if not isinstance(v, list):
        raise _bad(f"`{op}` takes a list of expressions")
    return [_read(x, key_of, leaves) for x in v]


def _read(v: Any, key_of: Callable[[str, str], str], leaves: List[str]) -> Node:
    if not isinstance(v, dict):
        raise _bad(f"{v!r} is not an object")
    if "event" in v:
        event, period = v.get("event"), v.get("period")
        if not isinstance(event, str) or not isinstance(period, str):
            raise _bad(f"{v!r}: an event takes a name and a period label")
        if not LABEL.match(period):
            raise _bad(f"`{period}` is not a period label (H:, D:, W:, M:, Y: or U)")
        leaves.append(key_of(event, period))
        return ("event", leaves[-1])
    if "at_least" in v:
        n = v["at_least"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise _bad(f"{v!r}: at_least takes a count")
        return ("at_least", n, _list(v.get("of"), "of", key_of, leaves))
    if len(v) != 1:
        raise _bad(f"{v!r}: one operator per object")
    op, arg = next(iter(v.items()))
    if op in NARY:
        return (op, _list(arg, op, key_of, leaves))
    if op == "not":
        return ("not", _read(arg, key_of, leaves))
    if op == "diff":
        items = _list(arg, op, key_of, leaves)
        if not items:
            raise _bad("`diff` of nothing")
        return ("diff", items)
    raise _bad(f"unknown operator `{op}`")


def _check(n: Node, in_and: bool) -> None:
    op = n[0]
    if op == "event":
        return
    if op == "not":
        if not in_and:
            raise _bad("NOT is only allowed as an operand of AND")
        return _check(n[1], False)
    if op == "at_least":
        k, v = n[1], n[2]
        if k == 0 or k > MAX_AT_LEAST or k > len(v):
            raise _bad(f"at least {k} of {len(v)} (n from 1 to {MAX_AT_LEAST} and at most the operands)")
        return _each(v, False)
    v = n[1]
    if not v:
        raise _bad("an operator of nothing")
    if op == "and":
        if all(x[0] == "not" for x in v):
            raise _bad("AND of NOTs alone")
        return _each(v, True)
    if op == "diff" and len(v) < 2:
        raise _bad("DIFF of nothing to subtract")
    _each(v, False)


def _each(v: List[Node], in_and: bool) -> None:
    for x in v:
        _check(x, in_and)


def read(v: Any, key_of: Callable[[str, str], str]) -> Tuple[Node, List[str]]:
    """The checked expression and the key of each leaf, in order."""
    leaves: List[str] = []
    node = _read(v, key_of, leaves)
    if len(leaves) > MAX_LEAVES:
        raise _bad(f"names more than {MAX_LEAVES} bitmaps")
    _check(node, False)
    return node, leaves


def _split_and(v: List[Node]) -> Tuple[Node, List[Node]]:
    """An AND's positive part (one node) and what its NOTs subtract."""
    pos = [x for x in v if x[0] != "not"]
    neg = [x[1] for x in v if x[0] == "not"]
    return (pos[0] if len(pos) == 1 else ("and", pos)), neg


class Program:
    """The BITOP steps of analytics.query over KEYS indices: 1 the result, then the registers, then the inputs."""

    def __init__(self) -> None:
        self.inputs: List[str] = []
        self.raw: List[Tuple[str, Any, List[Any]]] = []
        self.free: List[int] = []
        self.registers = 0

    def reg(self) -> Any:
        if self.free:
            return ("r", self.free.pop())
        self.registers += 1
        return ("r", self.registers - 1)

    def release(self, o: Any) -> None:
        if o[0] == "r":
            self.free.append(o[1])

    def step(self, op: str, dst: Any, srcs: List[Any]) -> None:
        self.raw.append((op, dst, list(srcs)))

    def leaf(self, key: str) -> Any:
        if key not in self.inputs:
            self.inputs.append(key)
        return ("i", self.inputs.index(key))

    def operand(self, n: Node) -> Any:
        if n[0] == "event":
            return self.leaf(n[1])
        r = self.reg()
        self.eval(n, r)
        return r

    def nary(self, op: str, v: List[Node], dst: Any) -> None:
        srcs = [self.operand(x) for x in v]
        self.step(op, dst, srcs)
        for s in srcs:
            self.release(s)

    def eval(self, n: Node, dst: Any) -> None:
        op = n[0]
        if op == "event":
            self.step("OR", dst, [self.leaf(n[1])])
        elif op in ("or", "xor"):
            self.nary(op.upper(), n[1], dst)
        elif op == "and":
            first, neg = _split_and(n[1])
            if neg:
                self.diff(first, neg, dst)
            else:
                self.nary("AND", n[1], dst)
        elif op == "diff":
            self.diff(n[1][0], n[1][1:], dst)
        elif op == "one":
            self.one(n[1], dst)
        else:
            self.at_least(n[1], n[2], dst)

    def diff(self, a: Node, rest: List[Node], dst: Any) -> None:
        """a AND NOT (OR rest) as a XOR (a AND (OR rest))."""
        if a[0] == "event":
            x = self.leaf(a[1])
        else:
            self.eval(a, dst)
            x = dst
        if len(rest) == 1:
            y = self.operand(rest[0])
        else:
            y = self.reg()
            self.nary("OR", rest, y)
        if x != dst:
            self.step("AND", dst, [x, y])
            self.step("XOR", dst, [dst, x])
        else:
            t = y if y[0] == "r" else self.reg()
            self.step("AND", t, [dst, y])
            self.step("XOR", dst, [dst, t])
            if t != y:
                self.release(t)
        self.release(y)

    def one(self, v: List[Node], dst: Any) -> None:
        """In exactly one: ones XOR-ed, twos OR-ed from ones AND x, then ones AND NOT twos."""
        if len(v) == 1:
            return self.nary("OR", v, dst)
        self.eval(v[0], dst)
        twos, t = self.reg(), self.reg()
        for i, e in enumerate(v[1:]):
            x = self.operand(e)
            if i == 0:
                self.step("AND", twos, [dst, x])
            else:
                self.step("AND", t, [dst, x])
                self.step("OR", twos, [twos, t])
            self.step("XOR", dst, [dst, x])
            self.release(x)
        self.step("AND", t, [dst, twos])
        self.step("XOR", dst, [dst, t])
        self.release(t)
        self.release(twos)

    def at_least(self, n: int, v: List[Node], dst: Any) -> None:
        """at[j]: the ids in at least j+1 of the operands so far; at[n-1] is dst."""
        if n == 1:
            return self.nary("OR", v, dst)
        at = [self.reg() for _ in range(n - 1)] + [dst]
        t = self.reg()
        for i, e in enumerate(v):
            x = self.operand(e)
            for j in range(min(i, n - 1), 0, -1):
                if j == i:
                    self.step("AND", at[j], [at[j - 1], x])
                else:
                    self.step("AND", t, [at[j - 1], x])
                    self.step("OR", at[j], [at[j], t])
            self.step("OR", at[0], [x] if i == 0 else [at[0], x])
            self.release(x)
        self.release(t)
        for r in at:
            self.release(r)

    def steps(self) -> List[str]:
        def index(o: Any) -> int:
            if o == ("result",):
                return 1
            at: int = o[1]
            return 2 + at if o[0] == "r" else 2 + self.registers + at

        return [" ".join([op, str(index(d))] + [str(index(s)) for s in srcs]) for op, d, srcs in self.raw]


def compile_(node: Node) -> Program:
    p = Program()
    p.eval(node, ("result",))
    return p


def evaluate(n: Node, bitmap_of: Dict[str, int]) -> int:
    """The bitmap of n as an int over equally long bitmaps (bit i of the id is at the same place in all)."""
    op = n[0]
    if op == "event":
        return bitmap_of[n[1]]
    if op == "not":
        raise AssertionError("checked: NOT only inside AND")
    if op == "at_least":
        at = [0] * n[1]
        for x in (evaluate(e, bitmap_of) for e in n[2]):
            for j in range(n[1] - 1, 0, -1):
                at[j] |= at[j - 1] & x
            at[0] |= x
        return at[-1]
    v = n[1]
    if op == "and":
        first, neg = _split_and(v)
        if neg:
            return evaluate(("diff", [first] + neg), bitmap_of)
    xs = [evaluate(e, bitmap_of) for e in v]
    if op == "diff":
        minus = 0
        for x in xs[1:]:
            minus |= x
        return xs[0] & ~minus
    out = xs[0]
    if op == "one":
        ones, twos = 0, 0
        for x in xs:
            twos |= ones & x
            ones ^= x
        return ones & ~twos
    for x in xs[1:]:
        out = out & x if op == "and" else out | x if op == "or" else out ^ x
    return out


def answer(result: int, nbytes: int, what: str, at: int, limit: int) -> List[int]:
    """The reply analytics.query gives for the result bitmap (an int over nbytes bytes)."""
    bits = nbytes * 8

    def has(i: int) -> bool:
        return i < bits and (result >> (bits - 1 - i)) & 1 == 1

    if what == "COUNT":
        return [bin(result).count("1")]
    if what == "MEMBER":
        return [1 if has(at) else 0]
    out, pos = [-1], at
    while len(out) <= limit and pos < bits:
        if has(pos):
            out.append(pos)
        pos += 1
    if pos < bits:
        out[0] = pos
    return out


def ints(blobs: List[Optional[bytes]]) -> Tuple[List[int], int]:
    """Fetched bitmaps (None: missing) as ints of one width, and that width in bytes."""
    n = max((len(b) for b in blobs if b), default=0)
    return [int.from_bytes((b or b"").ljust(n, b"\0"), "big") for b in blobs], n
