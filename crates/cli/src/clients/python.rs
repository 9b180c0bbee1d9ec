//! The Python package `redis_patterns`: `scripts.py` (one typed function
//! per script, from the registry), `_contract.py` (key templates, params,
//! constants, from the contracts), `_errors.py` (one exception per error
//! kind), and the hand-written runtime and helpers in `python/`.

use std::fmt::Write as _;

use redis_patterns::script::{ArgSpec, ArgType, ScriptInfo};
use redis_patterns::scripts::ALL;
use serde_json::Value;

use super::surface::{self, Part};
use super::syntax::{Syntax, call_lists, calls, checks, contract_consts, script_doc};
use super::{File, bundle, camel, pattern_op, patterns, scripts_of};

mod spelling;
use spelling::{PySurface, init};

const ROOT: &str = "redis_patterns/";

/// The hand-written runtime, emitted as it is: the drivers (sync and
/// asyncio, standalone and cluster), the input checks, the protocols
/// (notified waiting, the hold's renewal, the rolling retry, hashing) and
/// each pattern's operations over the generated surface.
const ASSETS: &[(&str, &str)] = &[
    ("_driver.py", include_str!("python/_driver.py")),
    ("_checks.py", include_str!("python/_checks.py")),
    ("_wait.py", include_str!("python/_wait.py")),
    ("_hold.py", include_str!("python/_hold.py")),
    ("_days.py", include_str!("python/_days.py")),
    ("_expr.py", include_str!("python/_expr.py")),
    ("hashing.py", include_str!("python/hashing.py")),
    ("_ops/__init__.py", include_str!("python/_ops/__init__.py")),
    ("_ops/lock.py", include_str!("python/_ops/lock.py")),
    (
        "_ops/analytics.py",
        include_str!("python/_ops/analytics.py"),
    ),
    (
        "_ops/expiring_map.py",
        include_str!("python/_ops/expiring_map.py"),
    ),
    (
        "_ops/semaphore.py",
        include_str!("python/_ops/semaphore.py"),
    ),
    ("_ops/rwlock.py", include_str!("python/_ops/rwlock.py")),
    (
        "_ops/rate_limit.py",
        include_str!("python/_ops/rate_limit.py"),
    ),
    (
        "_ops/sharded_hash.py",
        include_str!("python/_ops/sharded_hash.py"),
    ),
    ("_ops/packed.py", include_str!("python/_ops/packed.py")),
    ("_ops/visits.py", include_str!("python/_ops/visits.py")),
    (
        "_ops/login_log.py",
        include_str!("python/_ops/login_log.py"),
    ),
    ("_ops/signin.py", include_str!("python/_ops/signin.py")),
    ("_ops/bloom.py", include_str!("python/_ops/bloom.py")),
    ("_ops/rolling.py", include_str!("python/_ops/rolling.py")),
    ("_ops/layout.py", include_str!("python/_ops/layout.py")),
    ("py.typed", ""),
];

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

pub fn files() -> Vec<File> {
    let mut out: Vec<File> = ASSETS
        .iter()
        .map(|(name, text)| File {
            path: format!("{ROOT}{name}"),
            text: text.to_string(),
        })
        .collect();
    let walk = |asyncio, part| surface::emit(&mut PySurface::new(asyncio), part);
    let generated = [
        ("scripts.py", scripts()),
        ("_contract.py", contract()),
        ("errors.py", walk(false, Part::Errors)),
        ("records.py", walk(false, Part::Records)),
        ("_sync.py", walk(false, Part::Classes)),
        ("asyncio.py", walk(true, Part::Classes)),
        ("__init__.py", init()),
    ];
    for (name, text) in generated {
        out.push(File {
            path: format!("{ROOT}{name}"),
            text,
        });
    }
    out.push(File {
        path: "pyproject.toml".into(),
        text: PYPROJECT.replace("{version}", env!("CARGO_PKG_VERSION")),
    });
    out.extend(bundle(ROOT));
    out
}

/// `pip install DIR` installs the package (with its scripts, manifest and
/// `py.typed`).
const PYPROJECT: &str = r#"[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "redis-patterns"
version = "{version}"
description = "Compound Redis patterns as atomic Lua scripts (generated client of the redis-patterns crate)"
requires-python = ">=3.9"
dependencies = ["redis>=5.0"]

[tool.setuptools]
packages = ["redis_patterns", "redis_patterns._ops"]

[tool.setuptools.package-data]
redis_patterns = ["py.typed", "manifest.json", "lua/*/*.lua"]
"#;

/// Python's spelling.
pub(super) struct Python;

impl Syntax for Python {
    const NULL: &'static str = "None";
    const TRUE: &'static str = "True";
    const FALSE: &'static str = "False";
    const INT64_MIN: &'static str = "-(2 ** 63)";
    const INT64_MAX: &'static str = "2 ** 63 - 1";

    const MAP: [&'static str; 3] = ["{", ": ", "}"];
    const WORDS: [&'static str; 2] = ["(", ",)"];

    fn string(s: &str) -> String {
        py_str(s)
    }

    fn var(name: &str) -> String {
        ident(name)
    }

    fn encode(a: &ArgSpec, v: &str) -> String {
        match a.ty {
            ArgType::Integer | ArgType::Int64 => format!("str({v})"),
            ArgType::Float => format!("repr(float({v}))"),
            ArgType::Bool => format!("\"1\" if {v} else \"0\""),
            _ => v.to_string(),
        }
    }

    const ITEM: &'static str = "item";

    fn each_item(name: &str) -> (String, String) {
        (
            format!(
                "        for item in ({v} if type({v}) is list else _many({}, {v})):\n",
                py_str(name),
                v = ident(name)
            ),
            String::new(),
        )
    }

    /// A `str` key is taken as it is without a call (`_key` checks the
    /// others).
    fn key_expr(name: &str, variadic: bool) -> String {
        let v = ident(name);
        if variadic {
            format!("*_keys({}, {v})", py_str(name))
        } else {
            format!("{v} if type({v}) is str else _key({}, {v})", py_str(name))
        }
    }

    /// An empty list (an optional argument left out, the common case)
    /// spreads nothing without running a comprehension.
    fn spread(a: &ArgSpec, encoded: String) -> String {
        let v = ident(a.name);
        format!("*(() if type({v}) is list and not {v} else [{encoded} for item in {v}])")
    }

    /// An argument that accepts every value (no refusal reason) is not
    /// checked, unless it is text (whose check still tests str or bytes).
    fn checks(a: &ArgSpec) -> bool {
        !a.reason.is_empty() || matches!(a.ty, ArgType::String | ArgType::Bytes)
    }

    /// The checks a call makes most (integer ranges, strings, booleans,
    /// enums) test the accepted case inline and call the check (which
    /// raises, or accepts what the fast test does not cover: bytes, int
    /// subclasses) only when it fails: a call per argument cost more than the
    /// rest of building the call. `float` and `tagged` stay calls.
    fn check_call(pad: &str, check: &str, args: &[String]) -> String {
        let call = format!("_{check}({})", args.join(", "));
        let fast = match (check, args) {
            ("int", [_, v, lo, hi, _]) => {
                Some(format!("type({v}) is not int or not {lo} <= {v} <= {hi}"))
            }
            ("text", [_, v, non_empty, _]) if non_empty == Self::TRUE => {
                Some(format!("type({v}) is not str or not {v}"))
            }
            ("text", [_, v, _, _]) => Some(format!("type({v}) is not str")),
            ("bool", [_, v, _]) => Some(format!("type({v}) is not bool")),
            ("enum", [_, v, words, _]) => Some(format!("{v} not in {words}")),
            _ => None,
        };
        match fast {
            Some(cond) => format!("{pad}if {cond}:\n{pad}    {call}\n"),
            None => format!("{pad}{call}\n"),
        }
    }
}

fn py_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn ident(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// The Python type of a script's key or argument.
fn arg_type(a: Option<&ArgSpec>, variadic: bool) -> String {
    let one = match a.map(|a| a.ty) {
        None => "str",
        Some(ArgType::Integer | ArgType::Int64) => "int",
        Some(ArgType::Float) => "float",
        Some(ArgType::Bool) => "bool",
        Some(_) => "Union[str, bytes]",
    };
    if variadic {
        format!("Sequence[{one}]")
    } else {
        one.to_string()
    }
}

fn script_fn(out: &mut String, s: &ScriptInfo) {
    let (_, op) = pattern_op(s);
    let mut params = Vec::new();
    for k in s.keys {
        params.push(format!("{}: {}", ident(k.name), arg_type(None, k.variadic)));
    }
    for a in s.args {
        params.push(format!(
            "{}: {}",
            ident(a.name),
            arg_type(Some(a), a.variadic)
        ));
    }
    let _ = writeln!(
        out,
        "    @staticmethod\n    def {}({}) -> Call:",
        ident(op),
        params.join(", ")
    );
    let doc = script_doc(s, "        ") + "\n        ";
    let doc = doc.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let _ = writeln!(out, "        \"\"\"{doc}\"\"\"");
    out.push_str(&checks::<Python>(s));
    let (keys, args) = call_lists::<Python>(s);
    let _ = writeln!(
        out,
        "        return Call({}, [{}], [{}])\n",
        py_str(s.name),
        keys.join(", "),
        args.join(", ")
    );
}

/// A Python tuple of strings (`()`, `("a",)`, `("a", "b")`).
fn py_tuple<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.map(py_str).collect();
    match items.len() {
        0 => "()".to_string(),
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

fn scripts() -> String {
    let mut out = String::from(
        "\"\"\"One typed function per bundled script, generated from the script headers by\n`redis-patterns export --lang python`: each checks its arguments like the\nheader says (the same reasons as the script's own checks) and returns a Call,\nwhich redis_patterns.run(client, call) sends with EVALSHA (EVALSHA_RO for\nread-only scripts), loading the script after NOSCRIPT. Do not edit.\"\"\"\n\n",
    );
    out.push_str("from typing import Dict, Sequence, Union\n\nfrom ._driver import Call, Script, _bool, _enum, _float, _int, _key, _keys, _many, _tagged, _text\n\n");
    out.push_str("#: Every script of the bundle by name: its SHA1, file and whether it is read-only.\nSCRIPTS: Dict[str, Script] = {\n");
    for s in ALL {
        let _ = writeln!(
            out,
            "    {}: Script({}, {}, {}, {}, {}, {}),",
            py_str(s.name),
            py_str(s.name),
            py_str(s.sha1),
            py_str(s.file),
            if s.read_only { "True" } else { "False" },
            py_tuple(s.errors.iter().copied()),
            calls::<Python>(s),
        );
    }
    out.push_str("}\n");
    for p in patterns() {
        let _ = writeln!(
            out,
            "\n\nclass {}:\n    \"\"\"The `{p}` scripts (lua/{p}/).\"\"\"\n",
            camel(p)
        );
        for s in scripts_of(p) {
            script_fn(&mut out, s);
        }
    }
    out.push_str("\n\n#: The classes by pattern name.\nBY_PATTERN: Dict[str, type] = {\n");
    for p in patterns() {
        let _ = writeln!(out, "    {}: {},", py_str(p), camel(p));
    }
    out.push_str("}\n");
    out
}

fn contract() -> String {
    let mut out = String::from(
        "\"\"\"Key templates, settings and constants of every pattern, generated from\nredis_patterns::contract by `redis-patterns export --lang python`. Do not edit.\"\"\"\n\nfrom typing import Any, Dict, List\n\n",
    );
    out.push_str(&contract_consts::<Python>("    ", |doc, name, lines| {
        format!("#: {doc}\n{name}: Dict[str, Dict[str, Any]] = {{\n{lines}}}\n\n")
    }));
    out.push_str(
        "def render(template: str, **values: object) -> str:\n    \"\"\"`template` with every `<var>` replaced by str(values[var]).\"\"\"\n    out: List[str] = []\n    rest = template\n    while \"<\" in rest:\n        i = rest.index(\"<\")\n        j = rest.index(\">\", i)\n        out.append(rest[:i])\n        out.append(str(values[rest[i + 1:j]]))\n        rest = rest[j + 1:]\n    out.append(rest)\n    return \"\".join(out)\n\n\ndef key(pattern: str, role: str, **values: object) -> str:\n    \"\"\"The key of `role` in `pattern`, rendered from its template.\"\"\"\n    return render(str(KEYS[pattern][role]), **values)\n",
    );
    out
}
