//! Python's spelling of the client surface ([`Surface`]): the errors
//! (`errors.py`, one hierarchy under `redis.RedisError`), the records
//! (`records.py`, frozen dataclasses) and the classes, sync (`_sync.py`,
//! re-exported by the package) and asyncio (`asyncio.py`): each checks its
//! inputs, then hands them to its pattern's operations in `_ops/` and runs
//! them with the client's driver.

use std::fmt::Write as _;

use redis_patterns::contract::api::{Class, ErrorDecl, Operation, Param, Record, Type};
use serde_json::Value;

use super::super::surface::{Dir, Part, Surface, classes, is_class, records};
use super::{ident, py_str};

/// The Python surface; `asyncio`: the classes of `redis_patterns.asyncio`.
pub(crate) struct PySurface {
    asyncio: bool,
}

impl PySurface {
    pub(crate) fn new(asyncio: bool) -> Self {
        Self { asyncio }
    }
}

/// A docstring literal.
fn doc(text: &str) -> String {
    format!(
        "\"\"\"{}\"\"\"",
        text.replace('\\', "\\\\").replace("\"\"\"", "'''")
    )
}

/// A JSON default as a Python literal.
fn literal(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::String(s) => py_str(s),
        v => v.to_string(),
    }
}

/// The wrapper type of a class operation's result: `Lock` for a class,
/// else the plain type.
fn wraps_class(t: &Type) -> Option<(usize, &str)> {
    match t {
        Type::Named(n) if is_class(n) => Some((usize::MAX, n)),
        Type::Tuple(ts) => ts.iter().enumerate().find_map(|(i, t)| match t {
            Type::Named(n) if is_class(n) => Some((i, n.as_str())),
            _ => None,
        }),
        _ => None,
    }
}

impl Surface for PySurface {
    fn ty(&self, t: &Type, dir: Dir) -> String {
        let each = |t: &Type| self.ty(t, dir);
        match (t, dir) {
            (Type::Str | Type::Name | Type::Token | Type::Prefix, _) => "str".into(),
            (Type::Bytes, Dir::In) => "Union[str, bytes]".into(),
            (Type::Bytes, Dir::Out) => "bytes".into(),
            (Type::Int | Type::UInt | Type::Range(..) | Type::Ms, _) => "int".into(),
            (Type::Float, _) => "float".into(),
            (Type::Bool, _) => "bool".into(),
            (Type::Date, Dir::In) => "Union[datetime.date, str]".into(),
            (Type::Date, Dir::Out) => "datetime.date".into(),
            (Type::Any, _) => "Any".into(),
            (Type::Null, _) => "None".into(),
            (Type::Enum(words), _) => format!(
                "Literal[{}]",
                words
                    .iter()
                    .map(|w| py_str(w))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            (Type::List(t), Dir::In) => format!("Sequence[{}]", each(t)),
            (Type::List(t), Dir::Out) => format!("List[{}]", each(t)),
            (Type::Opt(t), _) => format!("Optional[{}]", each(t)),
            (Type::Tuple(ts), _) => format!(
                "Tuple[{}]",
                ts.iter().map(each).collect::<Vec<_>>().join(", ")
            ),
            (Type::Map(k, v), Dir::In) => format!("Mapping[{}, {}]", each(k), each(v)),
            (Type::Map(k, v), Dir::Out) => format!("Dict[{}, {}]", each(k), each(v)),
            (Type::Named(n), _) if is_class(n) => format!("\"{n}\""),
            (Type::Named(n), _) => format!("records.{n}"),
        }
    }

    fn check(&self, t: &Type, name: &str, var: &str, depth: usize) -> String {
        let n = py_str(name);
        let x = format!("x{depth}");
        let inner = |t: &Type| format!("lambda {x}: {}", self.check(t, name, &x, depth + 1));
        match t {
            Type::Str => format!("_c.text({n}, {var})"),
            Type::Name => format!("_c.name({n}, {var})"),
            Type::Token => format!("_c.token({n}, {var})"),
            Type::Prefix => format!("_c.prefix({n}, {var})"),
            Type::Bytes => format!("_c.bytes_({n}, {var})"),
            Type::Int => format!("_c.int_({n}, {var}, -(2 ** 63), 2 ** 63 - 1)"),
            Type::UInt => format!("_c.int_({n}, {var}, 0, 2 ** 64 - 1)"),
            Type::Range(a, b) => format!("_c.int_({n}, {var}, {a}, {b})"),
            Type::Ms => format!("_c.int_({n}, {var}, 1, 2 ** 63 - 1)"),
            Type::Float => format!("_c.float_({n}, {var})"),
            Type::Bool => format!("_c.bool_({n}, {var})"),
            Type::Date => format!("_c.date({n}, {var})"),
            Type::Any => format!("_c.json({n}, {var})"),
            Type::Null => "None".into(),
            Type::Enum(words) => format!(
                "_c.enum({n}, {var}, ({},))",
                words
                    .iter()
                    .map(|w| py_str(w))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Type::List(t) => format!("_c.list_({n}, {var}, {})", inner(t)),
            Type::Opt(t) => format!("_c.opt({var}, {})", inner(t)),
            Type::Tuple(ts) => format!(
                "_c.pair({n}, {var}, {})",
                ts.iter().map(inner).collect::<Vec<_>>().join(", ")
            ),
            Type::Map(k, v) => format!("_c.mapping({n}, {var}, {}, {})", inner(k), inner(v)),
            Type::Named(r) => format!("_c.record({n}, {var}, records.{r})"),
        }
    }

    fn header(&mut self, out: &mut String, part: Part) {
        out.push_str(
            "# Generated by `redis-patterns export --lang python` from the API description\n\
             # (src/<pattern>/client.api in the redis-patterns crate). Do not edit.\n\
             from __future__ import annotations\n\n\
             import dataclasses\n\
             import datetime\n\
             from typing import Any, ClassVar, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union\n\n\
             import redis\n\n",
        );
        match part {
            Part::Classes => out.push_str(
                "from . import _checks as _c\nfrom . import _driver, _hold, _ops, records\n\n\n",
            ),
            Part::Errors | Part::Records => out.push('\n'),
        }
    }

    fn error(&mut self, out: &mut String, e: &ErrorDecl) {
        if e.name == "InvalidArgument" {
            out.push_str(ERROR_BASE);
        }
        let bases = if e.name == "InvalidArgument" {
            "RedisPatternsError, ValueError"
        } else {
            "RedisPatternsError"
        };
        let _ = writeln!(out, "class {}({bases}):\n    {}\n", e.name, doc(&e.doc));
        let _ = writeln!(out, "    kind: ClassVar[str] = {}\n", py_str(&e.name));
        let params: Vec<String> = e
            .fields
            .iter()
            .map(|f| format!("{}: {}", ident(&f.name), self.ty(&f.ty, Dir::Out)))
            .collect();
        let _ = writeln!(
            out,
            "    def __init__(self, {}, text: Optional[str] = None) -> None:",
            params.join(", ")
        );
        for f in &e.fields {
            let _ = writeln!(out, "        self.{0} = {0}", ident(&f.name));
        }
        let data: Vec<String> = e
            .fields
            .iter()
            .map(|f| format!("{}: {}", py_str(&f.name), ident(&f.name)))
            .collect();
        let _ = writeln!(
            out,
            "        super().__init__(text or _describe(self.kind, {{{}}}))\n",
            data.join(", ")
        );
        let _ = writeln!(
            out,
            "    def data(self) -> Dict[str, Any]:\n        \"\"\"The error's data, by the description's names.\"\"\"\n        return {{{}}}\n\n",
            e.fields
                .iter()
                .map(|f| format!("{}: self.{}", py_str(&f.name), ident(&f.name)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    fn record(&mut self, out: &mut String, r: &Record) {
        let _ = writeln!(
            out,
            "@dataclasses.dataclass(frozen=True)\nclass {}:\n    {}\n",
            r.name,
            doc(&r.doc)
        );
        for f in &r.fields {
            let ty = self.ty(&f.ty, Dir::Out).replace("records.", "");
            let _ = writeln!(out, "    {}: {ty}", ident(&f.name));
            if !f.doc.is_empty() {
                let _ = writeln!(out, "    {}", doc(&f.doc));
            }
        }
        out.push_str("\n\n");
    }

    fn class_open(&mut self, out: &mut String, pattern: &str, c: &Class) {
        let client = if self.asyncio {
            "_driver.AsyncClient"
        } else {
            "_driver.SyncClient"
        };
        let runner = if self.asyncio {
            "_driver.AsyncRunner"
        } else {
            "_driver.SyncRunner"
        };
        let which = if self.asyncio {
            "redis.asyncio"
        } else {
            "redis-py"
        };
        let _ = writeln!(
            out,
            "class {}:\n    {}\n\n    _core: _ops.{pattern}.{}\n    _run: {runner}\n",
            c.name,
            doc(&format!(
                "{}\n\n    Runs on a {which} client (standalone or cluster).",
                c.doc
            )),
            c.name
        );
        if let Some(new) = &c.new {
            let _ = writeln!(
                out,
                "    def __init__(self, client: {client}, {}) -> None:",
                self.signature(new)
            );
            self.checks(out, new);
            let _ = writeln!(
                out,
                "        self._core = _ops.{pattern}.{}({})\n        self._run = {runner}(client)\n",
                c.name,
                self.call_args(new)
            );
        }
        let _ = writeln!(
            out,
            "    @classmethod\n    def _of(cls, run: {runner}, core: _ops.{pattern}.{}) -> \"{}\":\n        obj = cls.__new__(cls)\n        obj._core, obj._run = core, run\n        return obj\n",
            c.name, c.name
        );
        let _ = writeln!(
            out,
            "    def __repr__(self) -> str:\n        return f\"{}({{self._core!r}})\"\n",
            c.name
        );
        for g in &c.getters {
            let _ = writeln!(
                out,
                "    @property\n    def {}(self) -> {}:\n        {}\n        return self._core.{}\n",
                ident(&g.name),
                self.ty(&g.ty, Dir::Out),
                doc(&g.doc),
                ident(&g.name)
            );
        }
    }

    fn op(&mut self, out: &mut String, pattern: &str, c: &Class, op: &Operation) {
        let (def, wait) = if self.asyncio {
            ("async def", "await ")
        } else {
            ("def", "")
        };
        let head = self.head(op);
        let ret = self.ty(&op.returns, Dir::Out);
        let args = self.call_args(&op.params);
        let name = ident(&op.name);
        if op.name == "hold" {
            return self.hold(out, op, &head);
        }
        if op.pure {
            // A client-side computation: answered at once, sync or async.
            let _ = writeln!(
                out,
                "    def {name}(self{}) -> {ret}:\n        {}",
                head.sig, head.docs
            );
            self.checks(out, &op.params);
            let _ = writeln!(out, "        return self._core.{name}({args})\n");
        } else if op.is_static {
            let (runner, client) = self.driver();
            let _ = writeln!(
                out,
                "    @classmethod\n    {def} {name}(cls, client: {client}{}) -> {ret}:\n        {}",
                head.sig, head.docs
            );
            self.checks(out, &op.params);
            let _ = writeln!(out, "        run = {runner}(client)");
            let call = format!("_ops.{pattern}.{}.{name}({args})", c.name);
            self.ret(out, &op.returns, &format!("{wait}run({call})"), "run");
        } else {
            let _ = writeln!(
                out,
                "    {def} {name}(self{}) -> {ret}:\n        {}",
                head.sig, head.docs
            );
            self.checks(out, &op.params);
            let call = format!("self._core.{name}({args})");
            self.ret(
                out,
                &op.returns,
                &format!("{wait}self._run({call})"),
                "self._run",
            );
        }
    }

    fn class_close(&mut self, out: &mut String, _c: &Class) {
        out.push('\n');
    }

    fn footer(&mut self, out: &mut String, part: Part) {
        if part != Part::Errors {
            return;
        }
        out.push_str("#: The error kind of each domain error code of the scripts.\nBY_CODE: Dict[str, str] = {\n");
        for e in redis_patterns::contract::ErrorCode::ALL {
            let _ = writeln!(out, "    {}: {},", py_str(e.code), py_str(e.kind));
        }
        out.push_str("}\n\n");
        out.push_str(FROM_CODE);
    }
}

/// The error of a script's `-CODE detail` reply.
const FROM_CODE: &str = r#"
def from_code(code: str, detail: str, script: str) -> RedisPatternsError:
    """The error a script's `-CODE detail` reply stands for."""
    kind = BY_CODE.get(code)
    if kind == "InvalidArgument":
        arg, _, reason = detail.partition(" ")
        return InvalidArgument(arg, reason, script)
    if kind == "NotEnoughMemory" or code == "MAXMEMORY":
        words = detail.split(" ")

        def num(w: str) -> int:
            at = words.index(w) + 1 if w in words else len(words)
            return int(words[at].rstrip(":")) if at < len(words) and words[at].rstrip(":").isdigit() else 0

        what = detail.split(": ", 1)[1] if ": " in detail else detail
        return NotEnoughMemory(what, num("needed"), num("available"), "maxmemory", script)
    if kind == "LayoutMismatch":
        return LayoutMismatch(detail.split(" ", 1)[0], detail, "")
    cls: Any = globals().get(kind or "")
    if cls is None:
        return Script(script, code, detail)
    fields = list(cls.__init__.__code__.co_varnames[1 : cls.__init__.__code__.co_argcount - 1])
    given = {"script": script, "detail": detail}
    if not set(fields) <= set(given):
        return Script(script, code, detail)
    err: RedisPatternsError = cls(*[given[f] for f in fields], text=f"script {script}: {code} {detail}")
    return err
"#;

/// An operation's signature tail (`, name: type, ...`) and docstring.
struct Head {
    sig: String,
    docs: String,
}

impl PySurface {
    /// The driver's runner and client types.
    fn driver(&self) -> (&'static str, &'static str) {
        if self.asyncio {
            ("_driver.AsyncRunner", "_driver.AsyncClient")
        } else {
            ("_driver.SyncRunner", "_driver.SyncClient")
        }
    }

    fn head(&self, op: &Operation) -> Head {
        let sig = self.signature(&op.params);
        let raises = if op.raises.is_empty() {
            String::new()
        } else {
            format!(
                "\n\n        Raises {} (redis_patterns.errors).",
                op.raises.join(", ")
            )
        };
        Head {
            sig: if sig.is_empty() {
                sig
            } else {
                format!(", {sig}")
            },
            docs: doc(&format!("{}{raises}", op.doc)),
        }
    }

    /// `hold(...)`: the hold idiom over the pattern's Holder.
    fn hold(&self, out: &mut String, op: &Operation, head: &Head) {
        let hold = if self.asyncio {
            "AsyncHold"
        } else {
            "SyncHold"
        };
        let _ = writeln!(
            out,
            "    def hold(self{}) -> _hold.{hold}:\n        {}",
            head.sig, head.docs
        );
        self.checks(out, &op.params);
        let _ = writeln!(
            out,
            "        return _hold.{hold}(self._run, self._core.holder({}))\n",
            self.call_args(&op.params)
        );
    }

    /// `name: type = default, ...`
    fn signature(&self, params: &[Param]) -> String {
        params
            .iter()
            .map(|p| {
                let ty = self.ty(&p.ty, Dir::In);
                match &p.default {
                    Some(d) => format!("{}: {ty} = {}", ident(&p.name), literal(d)),
                    None => format!("{}: {ty}", ident(&p.name)),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Each input checked into `v_<name>`.
    fn checks(&self, out: &mut String, params: &[Param]) {
        for p in params {
            let var = ident(&p.name);
            let _ = writeln!(
                out,
                "        v_{} = {}",
                p.name,
                self.check(&p.ty, &p.name, &var, 0)
            );
        }
    }

    fn call_args(&self, params: &[Param]) -> String {
        params
            .iter()
            .map(|p| format!("v_{}", p.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `return <run>`, wrapping a core handle in its class.
    fn ret(&self, out: &mut String, t: &Type, run: &str, runner: &str) {
        match wraps_class(t) {
            None => {
                let _ = writeln!(out, "        return {run}\n");
            }
            Some((usize::MAX, class)) => {
                let _ = writeln!(out, "        return {class}._of({runner}, {run})\n");
            }
            Some((i, class)) => {
                let _ = writeln!(out, "        got = {run}");
                let Type::Tuple(ts) = t else {
                    unreachable!("a tuple")
                };
                let parts: Vec<String> = (0..ts.len())
                    .map(|j| {
                        if j == i {
                            format!("{class}._of({runner}, got[{j}])")
                        } else {
                            format!("got[{j}]")
                        }
                    })
                    .collect();
                let _ = writeln!(out, "        return ({})\n", parts.join(", "));
            }
        }
    }
}

/// The base of every error, first in `errors.py`.
const ERROR_BASE: &str = r#"def _describe(kind: str, data: Dict[str, Any]) -> str:
    return kind + ": " + ", ".join(f"{k}={v!r}" for k, v in data.items() if v is not None)


class RedisPatternsError(redis.RedisError):
    """Every error of this package: a redis.RedisError whose class names its kind
    (the Rust ErrorKind) and whose attributes carry its data (data() gives them
    by the description's names)."""

    kind: ClassVar[str] = ""

    def data(self) -> Dict[str, Any]:
        """The error's data, by the description's names."""
        return {}


"#;

/// `__init__.py`: the sync classes, the records and the errors.
pub(crate) fn init() -> String {
    let mut names: Vec<String> = classes().into_iter().map(|(_, c)| c.name).collect();
    let record_names: Vec<String> = records().into_iter().map(|r| r.name).collect();
    let mut out = String::from(
        "\"\"\"redis_patterns: the compound Redis patterns of the redis-patterns crate for\nPython (redis-py), generated by `redis-patterns export --lang python` from the\nsame API description, scripts and contracts as the Rust crate, so that Python\nservices share data with it key for key and bit for bit.\n\n    import redis\n    from redis_patterns import Lock\n\n    r = redis.Redis()                      # or redis.RedisCluster(...)\n    lock = Lock(r, \"orders:42\", lease_ms=5000)\n    with lock.hold(timeout_ms=1000) as held:   # renewed every lease/3\n        ...                                # held.fence guards the resource\n\nredis_patterns.asyncio has the same classes for redis.asyncio clients. Every\nerror derives from redis_patterns.errors.RedisPatternsError (a\nredis.RedisError); results are the dataclasses of redis_patterns.records.\n\"\"\"\n\n",
    );
    let _ = writeln!(out, "from ._sync import {}", names.join(", "));
    let _ = writeln!(out, "from .records import {}", record_names.join(", "));
    out.push_str(
        "from .errors import *  # noqa: F401,F403\nfrom . import errors, records, scripts\n\n",
    );
    names.extend(record_names);
    names.extend(["errors", "records", "scripts"].map(String::from));
    let _ = writeln!(
        out,
        "__all__ = [{}]",
        names
            .iter()
            .map(|n| py_str(n))
            .collect::<Vec<_>>()
            .join(", ")
    );
    out
}
