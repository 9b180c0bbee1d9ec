//! The script header grammar and the code generator behind `build.rs`.
//!
//! A build-dependency of `redis-patterns`: its `build.rs` turns every
//! `lua/<pattern>/<op>.lua` into a registry entry and a typed wrapper with
//! [`parse_dir`] and [`generate`]. The golden-file tests in `tests/` run the
//! generator on fixtures. Nothing here ships in the library.
//!
//! # Header grammar
//!
//! A script starts with a header of comment lines; the first line that does
//! not start with `--` (after the shebang) ends it. Every line is one of:
//!
//! ```text
//! #!lua                                   first line: a script that may write (EVALSHA)
//! #!lua flags=no-writes                   first line: a read-only script (EVALSHA_RO)
//! --- <summary>                           one line, required, right after the shebang
//! -- KEYS[1] <name>: <meaning>            one per key, numbered from 1 without gaps
//! -- KEYS[3..] <name>: <meaning>          a variadic tail of keys (last KEYS line)
//! -- ARGV[1] <name> <type>: <meaning>     type: integer | float | string | bytes
//! -- ARGV[2..] <name> <type>: <meaning>   a variadic tail of arguments (last ARGV line)
//! -- RETURNS <type>: <meaning>            integer | integers | bulk | bulks | status | array
//! -- ERRORS <CODE> [<CODE> ...]           domain error codes raised with redis.error_reply
//! --    <more text>                       (three or more spaces) continues the line above
//! ```
//!
//! Names are `snake_case` and unique within a script. The checker also reads the
//! body: every literal `KEYS[n]` / `ARGV[n]` must be declared and every declared
//! one used; a variadic tail must be read with a computed index (`KEYS[i]`) or
//! `#KEYS`; every `error_reply("CODE ...")` code must be listed in `ERRORS` and
//! every listed code must appear in the body.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The Lua-side type of one `ARGV` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    Integer,
    Float,
    String,
    Bytes,
}

impl ArgType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "integer" => Self::Integer,
            "float" => Self::Float,
            "string" => Self::String,
            "bytes" => Self::Bytes,
            _ => return None,
        })
    }
    /// The name used in headers and in the manifest.
    pub fn name(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Float => "float",
            Self::String => "string",
            Self::Bytes => "bytes",
        }
    }
    fn rust_one(self) -> &'static str {
        match self {
            Self::Integer => "i64",
            Self::Float => "f64",
            Self::String => "&str",
            Self::Bytes => "&[u8]",
        }
    }
    fn rust_many(self) -> &'static str {
        match self {
            Self::Integer => "&[i64]",
            Self::Float => "&[f64]",
            Self::String => "&[impl AsRef<str>]",
            Self::Bytes => "&[impl AsRef<[u8]>]",
        }
    }
    fn variant(self) -> &'static str {
        match self {
            Self::Integer => "Integer",
            Self::Float => "Float",
            Self::String => "String",
            Self::Bytes => "Bytes",
        }
    }
}

/// The reply type of a script, and the Rust type its wrapper decodes it to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnType {
    Integer,
    Integers,
    Bulk,
    Bulks,
    Status,
    Array,
}

impl ReturnType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "integer" => Self::Integer,
            "integers" => Self::Integers,
            "bulk" => Self::Bulk,
            "bulks" => Self::Bulks,
            "status" => Self::Status,
            "array" => Self::Array,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Integers => "integers",
            Self::Bulk => "bulk",
            Self::Bulks => "bulks",
            Self::Status => "status",
            Self::Array => "array",
        }
    }
    fn rust(self) -> &'static str {
        match self {
            Self::Integer => "i64",
            Self::Integers => "Vec<i64>",
            Self::Bulk => "Option<Vec<u8>>",
            Self::Bulks => "Vec<Option<Vec<u8>>>",
            Self::Status => "String",
            Self::Array => "redis::Value",
        }
    }
}

/// One `KEYS` or `ARGV` entry of a header.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    /// `None` for keys.
    pub ty: Option<ArgType>,
    pub doc: String,
    pub variadic: bool,
    /// Line of the declaration in the script.
    pub line: usize,
}

/// A parsed script: its place in the bundle and its header.
#[derive(Debug, Clone)]
pub struct ScriptSpec {
    /// `<pattern>.<op>`
    pub name: String,
    pub pattern: String,
    pub op: String,
    /// Path relative to `lua/`, with `/` separators.
    pub file: String,
    pub summary: String,
    pub keys: Vec<Param>,
    pub args: Vec<Param>,
    pub returns: ReturnType,
    pub returns_doc: String,
    pub errors: Vec<String>,
    pub read_only: bool,
    pub sha1_hex: String,
}

/// A header or layout problem, reported as `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Parses `[n]` or `[n..]` right after `KEYS`/`ARGV`; returns (n, variadic, rest).
fn parse_index(s: &str) -> Option<(usize, bool, &str)> {
    let s = s.strip_prefix('[')?;
    let close = s.find(']')?;
    let (inner, rest) = (&s[..close], &s[close + 1..]);
    let (num, variadic) = match inner.strip_suffix("..") {
        Some(n) => (n, true),
        None => (inner, false),
    };
    let n: usize = num.parse().ok()?;
    Some((n, variadic, rest))
}

/// Strips a trailing Lua `--` comment that is not inside a string literal.
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'-' && bytes.get(i + 1) == Some(&b'-') => return &line[..i],
            None => {}
        }
        i += 1;
    }
    line
}

/// How the body refers to `KEYS` or `ARGV`.
#[derive(Default)]
struct Uses {
    literal: Vec<(usize, usize)>, // (index, line)
    computed: Option<usize>,      // first line
}

fn scan_uses(body: &[(usize, &str)], table: &str) -> Uses {
    let mut uses = Uses::default();
    for &(lineno, line) in body {
        let code = strip_comment(line);
        let mut from = 0;
        while let Some(pos) = code[from..].find(table) {
            let at = from + pos;
            from = at + table.len();
            let before = code[..at].chars().next_back();
            let after = code[from..].chars().next();
            if matches!(before, Some(c) if c.is_ascii_alphanumeric() || c == '_')
                || matches!(after, Some(c) if c.is_ascii_alphanumeric() || c == '_')
            {
                continue;
            }
            let rest = &code[from..];
            if let Some(inner) = rest.strip_prefix('[') {
                // `KEYS[1]` and `#KEYS[1]` (the length of one entry)
                let close = inner.find(']').unwrap_or(inner.len());
                match inner[..close].trim().parse::<usize>() {
                    Ok(n) => uses.literal.push((n, lineno)),
                    Err(_) => {
                        uses.computed.get_or_insert(lineno);
                    }
                }
            } else {
                // `#KEYS`, `unpack(KEYS)`, `ipairs(ARGV)`: the whole table.
                uses.computed.get_or_insert(lineno);
            }
        }
    }
    uses
}

/// Finds the codes of `error_reply("CODE ...")` calls, with their lines.
fn scan_error_codes(body: &[(usize, &str)]) -> Vec<(String, usize)> {
    let mut codes = Vec::new();
    for &(lineno, line) in body {
        let code = strip_comment(line);
        let mut from = 0;
        while let Some(pos) = code[from..].find("error_reply(") {
            let start = from + pos + "error_reply(".len();
            from = start;
            let rest = code[start..].trim_start();
            if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
                let lit = &rest[1..];
                let end = lit.find([q, ' ']).unwrap_or(lit.len());
                codes.push((lit[..end].to_string(), lineno));
            }
        }
    }
    codes
}

/// Parses one script file. `file` is its path relative to `lua/`.
pub fn parse_script(file: &str, source: &str) -> Result<ScriptSpec, HeaderError> {
    let err = |line: usize, message: String| HeaderError {
        file: format!("lua/{file}"),
        line,
        message,
    };
    let parts: Vec<&str> = file.trim_end_matches(".lua").split('/').collect();
    if parts.len() != 2 || !file.ends_with(".lua") {
        return Err(err(0, "a script lives at lua/<pattern>/<op>.lua".into()));
    }
    let (pattern, op) = (parts[0].to_string(), parts[1].to_string());
    if !is_ident(&pattern) || !is_ident(&op) {
        return Err(err(0, "pattern and op names must be snake_case".into()));
    }
    let lines: Vec<&str> = source.lines().collect();
    let read_only = match lines.first().map(|l| l.trim_end()) {
        Some("#!lua") => false,
        Some("#!lua flags=no-writes") => true,
        _ => {
            return Err(err(
                1,
                "first line must be `#!lua` or `#!lua flags=no-writes`".into(),
            ));
        }
    };
    let summary = match lines.get(1).and_then(|l| l.strip_prefix("--- ")) {
        Some(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => return Err(err(2, "second line must be `--- <summary>`".into())),
    };

    let mut keys: Vec<Param> = Vec::new();
    let mut args: Vec<Param> = Vec::new();
    let mut returns: Option<(ReturnType, String)> = None;
    let mut errors: Vec<String> = Vec::new();
    let mut errors_line = 0;
    // Which doc string a continuation line extends.
    #[derive(Clone, Copy)]
    enum Last {
        None,
        Key,
        Arg,
        Returns,
    }
    let mut last = Last::None;
    let mut header_end = lines.len();
    for (idx, raw) in lines.iter().enumerate().skip(2) {
        let lineno = idx + 1;
        let Some(text) = raw.strip_prefix("--") else {
            header_end = idx;
            break;
        };
        if text.starts_with("   ") {
            let more = text.trim();
            let doc = match last {
                Last::None => {
                    return Err(err(
                        lineno,
                        "continuation line with nothing to continue".into(),
                    ));
                }
                Last::Key => &mut keys.last_mut().expect("key exists").doc,
                Last::Arg => &mut args.last_mut().expect("arg exists").doc,
                Last::Returns => &mut returns.as_mut().expect("returns exists").1,
            };
            doc.push(' ');
            doc.push_str(more);
            continue;
        }
        let text = text
            .strip_prefix(' ')
            .ok_or_else(|| err(lineno, "header lines start with `-- `".into()))?;
        let (word, rest) = text.split_at(text.find(['[', ' ']).unwrap_or(text.len()));
        match word {
            "KEYS" | "ARGV" => {
                let is_key = word == "KEYS";
                let (n, variadic, rest) = parse_index(rest)
                    .ok_or_else(|| err(lineno, format!("expected `{word}[n]` or `{word}[n..]`")))?;
                let (decl, doc) = rest
                    .split_once(':')
                    .ok_or_else(|| err(lineno, "expected `: <meaning>` after the name".into()))?;
                let doc = doc.trim();
                if doc.is_empty() {
                    return Err(err(lineno, "the meaning must not be empty".into()));
                }
                let mut decl = decl.split_whitespace();
                let name = decl
                    .next()
                    .ok_or_else(|| err(lineno, "missing name".into()))?;
                if !is_ident(name) || RUST_KEYWORDS.contains(&name) {
                    return Err(err(
                        lineno,
                        format!("`{name}` is not a snake_case name (or is a Rust keyword)"),
                    ));
                }
                let ty = if is_key {
                    None
                } else {
                    let t = decl.next().ok_or_else(|| {
                        err(
                            lineno,
                            "missing type (integer | float | string | bytes)".into(),
                        )
                    })?;
                    Some(ArgType::parse(t).ok_or_else(|| {
                        err(
                            lineno,
                            format!("unknown type `{t}` (integer | float | string | bytes)"),
                        )
                    })?)
                };
                if let Some(extra) = decl.next() {
                    return Err(err(lineno, format!("unexpected `{extra}` before `:`")));
                }
                let list = if is_key { &mut keys } else { &mut args };
                if list.last().is_some_and(|p| p.variadic) {
                    return Err(err(
                        lineno,
                        format!("nothing may follow the variadic {word} entry"),
                    ));
                }
                if n != list.len() + 1 {
                    return Err(err(
                        lineno,
                        format!("expected {word}[{}], found {word}[{n}]", list.len() + 1),
                    ));
                }
                if keys.iter().chain(args.iter()).any(|p| p.name == name) {
                    return Err(err(lineno, format!("duplicate name `{name}`")));
                }
                let list = if is_key { &mut keys } else { &mut args };
                list.push(Param {
                    name: name.to_string(),
                    ty,
                    doc: doc.to_string(),
                    variadic,
                    line: lineno,
                });
                last = if is_key { Last::Key } else { Last::Arg };
            }
            "RETURNS" => {
                if returns.is_some() {
                    return Err(err(lineno, "RETURNS given twice".into()));
                }
                let (ty, doc) = rest
                    .split_once(':')
                    .ok_or_else(|| err(lineno, "expected `RETURNS <type>: <meaning>`".into()))?;
                let ty = ReturnType::parse(ty.trim()).ok_or_else(|| {
                    err(lineno, format!("unknown return type `{}` (integer | integers | bulk | bulks | status | array)", ty.trim()))
                })?;
                if doc.trim().is_empty() {
                    return Err(err(lineno, "the meaning must not be empty".into()));
                }
                returns = Some((ty, doc.trim().to_string()));
                last = Last::Returns;
            }
            "ERRORS" => {
                errors_line = lineno;
                for code in rest.split_whitespace() {
                    let code = code.trim_end_matches(',');
                    if code.is_empty()
                        || !code
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                    {
                        return Err(err(
                            lineno,
                            format!("error code `{code}` must be UPPER_CASE"),
                        ));
                    }
                    errors.push(code.to_string());
                }
                if errors.is_empty() {
                    return Err(err(lineno, "ERRORS lists no code".into()));
                }
                last = Last::None;
            }
            other => {
                return Err(err(
                    lineno,
                    format!("unknown header line `{other}` (KEYS | ARGV | RETURNS | ERRORS)"),
                ));
            }
        }
    }
    let (returns, returns_doc) = returns.ok_or_else(|| {
        err(
            header_end + 1,
            "header has no `-- RETURNS <type>: <meaning>` line".into(),
        )
    })?;

    let body: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .skip(header_end)
        .map(|(i, l)| (i + 1, *l))
        .collect();
    for (table, list) in [("KEYS", &keys), ("ARGV", &args)] {
        let uses = scan_uses(&body, table);
        let fixed = list.iter().filter(|p| !p.variadic).count();
        let variadic = list.last().is_some_and(|p| p.variadic);
        for &(n, lineno) in &uses.literal {
            if n == 0 || (n > fixed && !variadic) {
                return Err(err(
                    lineno,
                    format!("{table}[{n}] is used but not declared in the header"),
                ));
            }
        }
        if let (Some(p), None) = (list.last().filter(|p| p.variadic), uses.computed) {
            return Err(err(
                p.line,
                format!(
                    "variadic {table}[{}..] is declared but never read with a computed index or `#{table}`",
                    fixed + 1
                ),
            ));
        }
        if let (false, Some(line)) = (variadic, uses.computed) {
            return Err(err(
                line,
                format!(
                    "{table} is read with a computed index or `#{table}` but the header declares no variadic {table}[n..]"
                ),
            ));
        }
        for (i, p) in list.iter().enumerate().filter(|(_, p)| !p.variadic) {
            if !uses.literal.iter().any(|&(n, _)| n == i + 1) {
                return Err(err(
                    p.line,
                    format!("{table}[{}] `{}` is declared but never used", i + 1, p.name),
                ));
            }
        }
    }
    let used_codes = scan_error_codes(&body);
    for (code, lineno) in &used_codes {
        if !errors.contains(code) {
            return Err(err(
                *lineno,
                format!("error code `{code}` is raised but not listed in `-- ERRORS`"),
            ));
        }
    }
    for code in &errors {
        if !used_codes.iter().any(|(c, _)| c == code) {
            return Err(err(
                errors_line,
                format!("error code `{code}` is listed in `-- ERRORS` but never raised"),
            ));
        }
    }

    Ok(ScriptSpec {
        name: format!("{pattern}.{op}"),
        pattern,
        op,
        file: file.to_string(),
        summary,
        keys,
        args,
        returns,
        returns_doc,
        errors,
        read_only,
        sha1_hex: String::new(),
    })
}

/// Lists `<pattern>/<op>.lua` files under `root`, sorted, as relative paths.
pub fn list_scripts(root: &Path) -> Result<Vec<(String, PathBuf)>, HeaderError> {
    let io = |p: &Path, e: std::io::Error| HeaderError {
        file: p.display().to_string(),
        line: 0,
        message: e.to_string(),
    };
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .map_err(|e| io(root, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| io(root, e))?;
    dirs.sort_by_key(|d| d.file_name());
    for dir in dirs {
        let path = dir.path();
        if path.is_file() {
            if path.extension().is_some_and(|e| e == "lua") {
                return Err(HeaderError {
                    file: path.display().to_string(),
                    line: 0,
                    message: "a script lives at lua/<pattern>/<op>.lua".into(),
                });
            }
            continue;
        }
        let mut files: Vec<_> = std::fs::read_dir(&path)
            .map_err(|e| io(&path, e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| io(&path, e))?;
        files.sort_by_key(|d| d.file_name());
        for f in files {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "lua") {
                let rel = format!(
                    "{}/{}",
                    dir.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                out.push((rel, p));
            }
        }
    }
    Ok(out)
}

fn rust_str(s: &str) -> String {
    format!("{s:?}")
}

/// Header text as rustdoc Markdown: `[`, `]`, `<`, `>` and `\\` are
/// escaped so that `KEYS[2]` or `SETBIT <day>` stay text, not links or HTML.
fn doc_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '[' | ']' | '<' | '>' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn upper(name: &str) -> String {
    name.replace('.', "_").to_uppercase()
}

/// Generates the registry and the wrappers for `specs` (sorted by name).
pub fn generate(specs: &[ScriptSpec]) -> String {
    let mut out = String::new();
    out.push_str("// @generated by build.rs from the headers in lua/ — do not edit.\n");
    out.push_str(
        "// Regenerated on every build; the golden test in tests/codegen.rs guards its shape.\n\n",
    );
    for s in specs {
        let _ = writeln!(
            out,
            "/// Registry entry of `{}` (`lua/{}`).",
            s.name, s.file
        );
        let _ = writeln!(
            out,
            "pub static {}: ScriptInfo = ScriptInfo {{",
            upper(&s.name)
        );
        let _ = writeln!(out, "    name: {},", rust_str(&s.name));
        let _ = writeln!(out, "    file: {},", rust_str(&s.file));
        let _ = writeln!(out, "    sha1: {},", rust_str(&s.sha1_hex));
        let _ = writeln!(out, "    summary: {},", rust_str(&s.summary));
        out.push_str("    keys: &[\n");
        for k in &s.keys {
            let _ = writeln!(
                out,
                "        KeySpec {{ name: {}, doc: {}, variadic: {} }},",
                rust_str(&k.name),
                rust_str(&k.doc),
                k.variadic
            );
        }
        out.push_str("    ],\n    args: &[\n");
        for a in &s.args {
            let _ = writeln!(
                out,
                "        ArgSpec {{ name: {}, ty: ArgType::{}, doc: {}, variadic: {} }},",
                rust_str(&a.name),
                a.ty.expect("args have types").variant(),
                rust_str(&a.doc),
                a.variadic
            );
        }
        out.push_str("    ],\n");
        let _ = writeln!(out, "    returns: {},", rust_str(s.returns.name()));
        let _ = writeln!(out, "    returns_doc: {},", rust_str(&s.returns_doc));
        let _ = writeln!(out, "    errors: &{:?},", s.errors);
        let _ = writeln!(out, "    read_only: {},", s.read_only);
        out.push_str("};\n\n");
    }
    out.push_str(
        "/// Every script of the bundle, sorted by name.\npub static ALL: &[&ScriptInfo] = &[\n",
    );
    for s in specs {
        let _ = writeln!(out, "    &{},", upper(&s.name));
    }
    out.push_str("];\n");

    let mut patterns: Vec<&str> = specs.iter().map(|s| s.pattern.as_str()).collect();
    patterns.dedup();
    for pattern in patterns {
        let _ = writeln!(
            out,
            "\n/// Typed wrappers of the `{pattern}` scripts (`lua/{pattern}/`)."
        );
        let _ = writeln!(out, "pub mod {pattern} {{");
        out.push_str("    #[allow(unused_imports)]\n    use super::ScriptCall;\n");
        for s in specs.iter().filter(|s| s.pattern == pattern) {
            out.push('\n');
            let _ = writeln!(out, "    /// {}", doc_text(&s.summary));
            out.push_str("    ///\n");
            for (i, k) in s.keys.iter().enumerate() {
                let idx = if k.variadic {
                    format!("{}..", i + 1)
                } else {
                    (i + 1).to_string()
                };
                let _ = writeln!(
                    out,
                    "    /// * `KEYS[{idx}]` `{}`: {}",
                    k.name,
                    doc_text(&k.doc)
                );
            }
            for (i, a) in s.args.iter().enumerate() {
                let idx = if a.variadic {
                    format!("{}..", i + 1)
                } else {
                    (i + 1).to_string()
                };
                let _ = writeln!(
                    out,
                    "    /// * `ARGV[{idx}]` `{}` ({}): {}",
                    a.name,
                    a.ty.expect("args have types").name(),
                    doc_text(&a.doc)
                );
            }
            out.push_str("    ///\n");
            let _ = writeln!(
                out,
                "    /// Returns ({}): {}",
                s.returns.name(),
                doc_text(&s.returns_doc)
            );
            if !s.errors.is_empty() {
                out.push_str("    ///\n");
                let codes: Vec<String> = s.errors.iter().map(|c| format!("`{c}`")).collect();
                let _ = writeln!(out, "    /// Domain errors: {}.", codes.join(", "));
            }
            out.push_str("    ///\n");
            let _ = writeln!(
                out,
                "    /// Runs with `{}`; source `lua/{}`.",
                if s.read_only { "EVALSHA_RO" } else { "EVALSHA" },
                s.file
            );
            let mut params = Vec::new();
            for k in &s.keys {
                params.push(format!(
                    "{}: {}",
                    k.name,
                    if k.variadic {
                        "&[impl AsRef<str>]"
                    } else {
                        "&str"
                    }
                ));
            }
            for a in &s.args {
                let ty = a.ty.expect("args have types");
                params.push(format!(
                    "{}: {}",
                    a.name,
                    if a.variadic {
                        ty.rust_many()
                    } else {
                        ty.rust_one()
                    }
                ));
            }
            if params.len() > 7 {
                out.push_str("    #[allow(clippy::too_many_arguments)]\n");
            }
            let _ = writeln!(
                out,
                "    pub fn {}({}) -> ScriptCall<{}> {{",
                s.op,
                params.join(", "),
                s.returns.rust()
            );
            let fixed = s.keys.iter().filter(|k| !k.variadic).count();
            let numkeys = match s.keys.iter().find(|k| k.variadic) {
                Some(k) if fixed == 0 => format!("{}.len()", k.name),
                Some(k) => format!("{fixed} + {}.len()", k.name),
                None => fixed.to_string(),
            };
            let _ = writeln!(
                out,
                "        #[allow(unused_mut)]\n        let mut call = ScriptCall::new(&super::{}, {numkeys});",
                upper(&s.name)
            );
            for k in &s.keys {
                if k.variadic {
                    let _ = writeln!(
                        out,
                        "        for key in {} {{\n            call.key(key.as_ref().as_bytes());\n        }}",
                        k.name
                    );
                } else {
                    let _ = writeln!(out, "        call.key({}.as_bytes());", k.name);
                }
            }
            for a in &s.args {
                let ty = a.ty.expect("args have types");
                let one = |v: &str| match ty {
                    ArgType::Integer => format!("call.arg_int({v})"),
                    ArgType::Float => format!("call.arg_float({v})"),
                    ArgType::String => format!("call.arg({v}.as_bytes())"),
                    ArgType::Bytes => format!("call.arg({v})"),
                };
                if a.variadic {
                    let item = match ty {
                        ArgType::Integer | ArgType::Float => "*item",
                        ArgType::String => "item.as_ref()",
                        ArgType::Bytes => "item.as_ref()",
                    };
                    let _ = writeln!(
                        out,
                        "        for item in {} {{\n            {};\n        }}",
                        a.name,
                        one(item)
                    );
                } else {
                    let _ = writeln!(out, "        {};", one(&a.name));
                }
            }
            out.push_str("        call\n    }\n");
        }
        out.push_str("}\n");
    }
    out
}

/// Lowercase hex SHA1 of `bytes`: the `EVALSHA` handle of a script.
pub fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// Parses every script under `root` and fills in its SHA1.
pub fn parse_dir(root: &Path) -> Result<Vec<ScriptSpec>, HeaderError> {
    let mut specs = Vec::new();
    for (rel, path) in list_scripts(root)? {
        let source = std::fs::read_to_string(&path).map_err(|e| HeaderError {
            file: format!("lua/{rel}"),
            line: 0,
            message: format!("not readable as UTF-8 text: {e}"),
        })?;
        let mut spec = parse_script(&rel, &source)?;
        spec.sha1_hex = sha1_hex(source.as_bytes());
        specs.push(spec);
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(specs)
}
