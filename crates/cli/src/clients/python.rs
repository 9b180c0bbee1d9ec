//! The Python package `redis_patterns`: `scripts.py` (one typed function
//! per script, from the registry), `_contract.py` (key templates, params,
//! constants, from the contracts), `_errors.py` (one exception per error
//! kind), and the hand-written runtime and helpers in `python/`.

use std::fmt::Write as _;

use redis_patterns::contract::ERROR_CODES;
use redis_patterns::script::{ArgSpec, ArgType, ScriptInfo};
use redis_patterns::scripts::ALL;
use serde_json::Value;

use super::syntax::{Syntax, call_lists, checks, contract_tables};
use super::{File, bundle, camel, patterns};

const ROOT: &str = "redis_patterns/";

/// The hand-written modules, emitted as they are.
const ASSETS: &[(&str, &str)] = &[
    ("__init__.py", include_str!("python/__init__.py")),
    ("_core.py", include_str!("python/_core.py")),
    ("hashing.py", include_str!("python/hashing.py")),
    ("lock.py", include_str!("python/lock.py")),
    ("visits.py", include_str!("python/visits.py")),
    ("bitmaps.py", include_str!("python/bitmaps.py")),
    ("rolling.py", include_str!("python/rolling.py")),
    ("bloom.py", include_str!("python/bloom.py")),
    ("sharded_hash.py", include_str!("python/sharded_hash.py")),
    ("packed.py", include_str!("python/packed.py")),
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
    out.push(File {
        path: format!("{ROOT}scripts.py"),
        text: scripts(),
    });
    out.push(File {
        path: format!("{ROOT}_contract.py"),
        text: contract(),
    });
    out.push(File {
        path: format!("{ROOT}_errors.py"),
        text: errors(),
    });
    out.extend(bundle(ROOT));
    out
}

/// Python's spelling.
pub(super) struct Python;

impl Syntax for Python {
    const NULL: &'static str = "None";
    const TRUE: &'static str = "True";
    const FALSE: &'static str = "False";
    const INT64_MIN: &'static str = "-(2 ** 63)";
    const INT64_MAX: &'static str = "2 ** 63 - 1";

    fn string(s: &str) -> String {
        py_str(s)
    }

    fn map(entries: Vec<(String, String)>) -> String {
        let entries: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("{{{}}}", entries.join(", "))
    }

    fn words(words: Vec<String>) -> String {
        format!("({},)", words.join(", "))
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
                "        for item in _many({}, {}):\n",
                py_str(name),
                ident(name)
            ),
            String::new(),
        )
    }

    fn key_expr(name: &str, variadic: bool) -> String {
        if variadic {
            format!("*_keys({}, {})", py_str(name), ident(name))
        } else {
            format!("_key({}, {})", py_str(name), ident(name))
        }
    }

    fn spread(a: &ArgSpec, encoded: String) -> String {
        format!("*[{encoded} for item in {}]", ident(a.name))
    }

    /// An argument that accepts every value (no refusal reason) is not
    /// checked, unless it is text (whose check still tests str or bytes).
    fn checks(a: &ArgSpec) -> bool {
        !a.reason.is_empty() || matches!(a.ty, ArgType::String | ArgType::Bytes)
    }

    fn check_call(pad: &str, check: &str, args: &[String]) -> String {
        format!("{pad}_{check}({})\n", args.join(", "))
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

fn script_fn(out: &mut String, s: &ScriptInfo) {
    let op = s.name.split('.').nth(1).expect("pattern.op");
    let mut params = Vec::new();
    for k in s.keys {
        params.push(ident(k.name));
    }
    for a in s.args {
        params.push(ident(a.name));
    }
    let _ = writeln!(
        out,
        "    @staticmethod\n    def {}({}):",
        ident(op),
        params.join(", ")
    );
    let mut doc = format!("{}\n\n", s.summary);
    // One docstring line per KEYS and ARGV entry: position, name, what it is.
    let mut entry = |list: &str, i: usize, variadic: bool, name: &str, what: String, text: &str| {
        let dots = if variadic { ".." } else { "" };
        let _ = writeln!(
            doc,
            "        {list}[{}{dots}] {name} ({what}): {text}",
            i + 1
        );
    };
    for (i, k) in s.keys.iter().enumerate() {
        let types: Vec<&str> = k.types.iter().map(|t| t.name()).collect();
        let rw = if k.written { "rw" } else { "ro" };
        let what = format!("{}, {rw}", types.join(","));
        entry("KEYS", i, k.variadic, k.name, what, k.doc);
    }
    for (i, a) in s.args.iter().enumerate() {
        entry(
            "ARGV",
            i,
            a.variadic,
            a.name,
            a.ty.name().to_string(),
            a.doc,
        );
    }
    let _ = write!(
        doc,
        "\n        Returns ({}): {}\n        Errors: {}. Refuses an argument outside its declaration with\n        InvalidArgument before anything is sent.\n        ",
        s.returns,
        s.returns_doc,
        s.errors.join(", ")
    );
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

fn scripts() -> String {
    let mut out = String::from(
        "\"\"\"One typed function per bundled script, generated from the script headers by\n`redis-patterns export --lang python`: each checks its arguments like the\nheader says (the same reasons as the script's own checks) and returns a Call,\nwhich redis_patterns.run(client, call) sends with EVALSHA (EVALSHA_RO for\nread-only scripts), loading the script after NOSCRIPT. Do not edit.\"\"\"\n\n",
    );
    out.push_str("from ._core import Call, Script, _bool, _enum, _float, _int, _key, _keys, _many, _tagged, _text\n\n");
    out.push_str("#: Every script of the bundle by name: its SHA1, file and whether it is read-only.\nSCRIPTS = {\n");
    for s in ALL {
        let _ = writeln!(
            out,
            "    {}: Script({}, {}, {}, {}, ({},)),",
            py_str(s.name),
            py_str(s.name),
            py_str(s.sha1),
            py_str(s.file),
            if s.read_only { "True" } else { "False" },
            s.errors
                .iter()
                .map(|e| py_str(e))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str("}\n");
    for p in patterns() {
        let _ = writeln!(
            out,
            "\n\nclass {}:\n    \"\"\"The `{p}` scripts (lua/{p}/).\"\"\"\n",
            camel(p)
        );
        for s in ALL.iter().filter(|s| s.name.split('.').next() == Some(p)) {
            script_fn(&mut out, s);
        }
    }
    out.push_str("\n\n#: The classes by pattern name.\nBY_PATTERN = {\n");
    for p in patterns() {
        let _ = writeln!(out, "    {}: {},", py_str(p), camel(p));
    }
    out.push_str("}\n");
    out
}

fn contract() -> String {
    let mut out = String::from(
        "\"\"\"Key templates, settings and constants of every pattern, generated from\nredis_patterns::contract by `redis-patterns export --lang python`. Do not edit.\"\"\"\n\n",
    );
    for table in contract_tables() {
        let _ = writeln!(out, "#: {}\n{} = {{", table.doc::<Python>(), table.name);
        for (pattern, entries) in table.rows::<Python>() {
            let _ = writeln!(out, "    {pattern}: {entries},");
        }
        out.push_str("}\n\n");
    }
    out.push_str(
        "def render(template, **values):\n    \"\"\"`template` with every `<var>` replaced by str(values[var]).\"\"\"\n    out = []\n    rest = template\n    while \"<\" in rest:\n        i = rest.index(\"<\")\n        j = rest.index(\">\", i)\n        out.append(rest[:i])\n        out.append(str(values[rest[i + 1:j]]))\n        rest = rest[j + 1:]\n    out.append(rest)\n    return \"\".join(out)\n\n\ndef key(pattern, role, **values):\n    \"\"\"The key of `role` in `pattern`, rendered from its template.\"\"\"\n    return render(KEYS[pattern][role], **values)\n",
    );
    out
}

fn errors() -> String {
    let mut out = String::from(
        "\"\"\"The exceptions of the generated client, one per error kind of the bundle\n(generated from redis_patterns::contract::ERROR_CODES). Do not edit.\"\"\"\n\n\nclass RedisPatternsError(Exception):\n    \"\"\"Every error of this package.\"\"\"\n\n\nclass InvalidArgument(RedisPatternsError, ValueError):\n    \"\"\"An argument was refused: by this client before anything was sent (script\n    is None), or by a script's own checks (BADARG) before its first write.\"\"\"\n\n    code = \"BADARG\"\n\n    def __init__(self, name, reason, script=None):\n        self.name, self.reason, self.script = name, reason, script\n        where = f\"script {script}: \" if script else \"\"\n        super().__init__(f\"{where}invalid {name}: {reason}\")\n\n\nclass ScriptError(RedisPatternsError):\n    \"\"\"A script answered with one of its domain error codes.\"\"\"\n\n    code = None\n\n    def __init__(self, script, detail):\n        self.script, self.detail = script, detail\n        where = f\"script {script}: \" if script else \"\"\n        super().__init__(f\"{where}{self.code} {detail}\")\n\n\nclass ServerError(RedisPatternsError):\n    \"\"\"The server refused a command with one of its own codes (OOM, WRONGTYPE,\n    NOPERM, ...).\"\"\"\n\n    def __init__(self, code, message, script=None):\n        self.code, self.message, self.script = code, message, script\n        where = f\"script {script}: \" if script else \"\"\n        super().__init__(f\"{where}{code} {message}\")\n\n\nclass PipelineInterrupted(RedisPatternsError):\n    \"\"\"A batch met NOSCRIPT in the middle while later calls ran: the first\n    ran_in_order calls ran, in order, and none ran twice.\"\"\"\n\n    def __init__(self, ran_in_order, total):\n        self.ran_in_order, self.total = ran_in_order, total\n        super().__init__(f\"pipeline interrupted by NOSCRIPT after {ran_in_order} of {total} calls ran in order\")\n",
    );
    for e in ERROR_CODES.iter().filter(|e| e.code != "BADARG") {
        let _ = write!(
            out,
            "\n\nclass {}(ScriptError):\n    {}\n\n    code = {}\n",
            e.kind,
            py_str(&format!("{} ({}: {})", e.meaning, e.code, e.detail)),
            py_str(e.code)
        );
    }
    out.push_str("\n\n#: The exception class of each domain error code.\nBY_CODE = {\n    \"BADARG\": InvalidArgument,\n");
    for e in ERROR_CODES.iter().filter(|e| e.code != "BADARG") {
        let _ = writeln!(out, "    {}: {},", py_str(e.code), e.kind);
    }
    out.push_str("}\n");
    out
}
