//! The public API of every pattern, described once for every client: the
//! classes with their settings, accessors and operations (inputs, optional
//! inputs with defaults, result type, the errors each may raise), the named
//! results (records) and the errors with their data.
//!
//! Each pattern's description is a small text file next to its Rust code
//! (`src/<pattern>/client.api`), the errors' in `src/contract/errors.api`.
//! The tests prove that the Rust API and the description agree: every
//! operation described is run through the Rust API by the conformance suite
//! (`tests/conformance.rs`, which refuses an operation it does not know and
//! one no case covers), every record's fields are the fields the Rust type
//! serializes, and every error's data is what the Rust error carries. The
//! client generators of the CLI (`redis-patterns export --lang ...`) emit
//! each language's classes, signatures, input checks, records and errors
//! from it; the manifest carries it as `patterns[].api`.
//!
//! # The format
//!
//! ```text
//! # a comment
//! error LockBusy(key: str, retry_after_ms: opt[int]) "The lock is held by another owner."
//!
//! record Lease "Proof of ownership."
//!   token: str "the owner token"
//!   fence: int "the fencing token"
//!
//! class Lock "A named lock."
//!   new(name: name, lease_ms: ms = 30000, prefix: prefix = "redis:lock:")
//!   get key: str "The key holding the owner token."
//!   op try_acquire() -> Lease ! LockBusy "One attempt with a fresh token."
//!   fn key_of(subject: name) -> str "A client-side computation (no server)."
//!   static create(name: name) -> Bloom "A class-level operation (returns a handle)."
//! ```
//!
//! Types ([`Type`]): `str`, `bytes` (text or bytes in, bytes out), `int`,
//! `uint` (>= 0), `int[a..b]`, `float`, `bool`, `date` (a calendar day:
//! a date object or `YYYY-MM-DD`), `ms` (a duration in whole milliseconds, at
//! least 1), `name` (not empty, no `{` or `}`), `token` (not empty), `prefix`
//! (no `{` or `}`), `enum[a, b]`, `any` (a JSON value), `list[T]`,
//! `opt[T]` (may be null), `tuple[A, B]`, `map[K, V]`, and the name of a
//! record or class. An input with `= <JSON literal>` is optional. Every
//! language spells a name in its own casing; durations in milliseconds
//! carry the Rust name with `_ms` (Rust `lease: Duration` is `lease_ms`).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API of one pattern (or the shared errors).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Api {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The error kinds the pattern raises, with their data.
    pub errors: Vec<ErrorDecl>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The named results of its operations.
    pub records: Vec<Record>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Its classes.
    pub classes: Vec<Class>,
}

impl Api {
    /// Parses one description; `what` names it in errors (`lock`).
    ///
    /// # Panics
    ///
    /// On a malformed description, naming the line (a bug the tests catch).
    pub fn parse(what: &str, text: &str) -> Api {
        match try_parse(text) {
            Ok(api) => api,
            Err((line, e)) => panic!("{what}: client.api line {line}: {e}"),
        }
    }

    /// The errors every pattern shares (`src/contract/errors.api`).
    pub fn errors() -> Api {
        Self::parse("errors", include_str!("errors.api"))
    }
}

/// An error kind and the data it carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDecl {
    /// The kind's name (`LockBusy`).
    pub name: String,
    /// The data it carries.
    pub fields: Vec<Field>,
    /// What it means.
    pub doc: String,
}

/// A named result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The record's name (`Lease`).
    pub name: String,
    /// What it is.
    pub doc: String,
    /// Its fields.
    pub fields: Vec<Field>,
}

/// A record field, an error's datum or an accessor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// The name (`retry_after_ms`).
    pub name: String,
    #[serde(rename = "type")]
    /// Its type.
    pub ty: Type,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// What it holds.
    pub doc: String,
}

/// A class: one handle of a pattern (a lock, a counter ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Class {
    /// The class's name (`Lock`).
    pub name: String,
    /// What a handle is.
    pub doc: String,
    /// The settings of its constructor; `None` for a class made only by a
    /// static operation (a Bloom filter is created or opened).
    pub new: Option<Vec<Param>>,
    /// Read-only accessors.
    pub getters: Vec<Field>,
    /// Its operations.
    pub ops: Vec<Operation>,
}

/// An input of a constructor or an operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// The input's name (`lease_ms`).
    pub name: String,
    #[serde(rename = "type")]
    /// Its type.
    pub ty: Type,
    /// The default of an optional input (`null` is a default too).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub default: Option<Value>,
}

/// A field that is there, `null` included (absent: the serde default).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// An operation of a class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    /// The operation's name (`try_acquire`).
    pub name: String,
    /// A class-level operation (no handle needed; it may return one).
    #[serde(rename = "static")]
    pub is_static: bool,
    /// A client-side computation (`fn`): no server is asked (a key, an
    /// offset), so every client answers it at once, also an async one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pure: bool,
    /// Its inputs, in order.
    pub params: Vec<Param>,
    /// What it answers.
    pub returns: Type,
    /// The error kinds it raises besides invalid input and server errors.
    pub raises: Vec<String>,
    /// What it does.
    pub doc: String,
}

/// A type of the description (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Type {
    /// `str`: text.
    Str,
    /// `bytes`: text or bytes in, bytes out.
    Bytes,
    /// `int`: a 64-bit integer.
    Int,
    /// `uint`: an integer >= 0.
    UInt,
    /// `int[a..b]`: an integer from `a` to `b`.
    Range(i64, i64),
    /// `float`: a number.
    Float,
    /// `bool`.
    Bool,
    /// `date`: a calendar day (a date object or `YYYY-MM-DD`).
    Date,
    /// `ms`: a duration in whole milliseconds, at least 1.
    Ms,
    /// `name`: not empty, no `{` or `}`.
    Name,
    /// `token`: not empty.
    Token,
    /// `prefix`: a key prefix, no `{` or `}`.
    Prefix,
    /// `any`: a JSON value.
    Any,
    /// `null`: nothing (an operation that answers nothing).
    Null,
    /// `enum[a, b]`: one of the words.
    Enum(Vec<String>),
    /// `list[T]`.
    List(Box<Type>),
    /// `opt[T]`: a `T`, or null.
    Opt(Box<Type>),
    /// `tuple[A, B]`.
    Tuple(Vec<Type>),
    /// `map[K, V]`.
    Map(Box<Type>, Box<Type>),
    /// A record or class.
    Named(String),
}

impl Type {
    /// The type without `opt[...]`.
    pub fn inner(&self) -> &Type {
        match self {
            Type::Opt(t) => t.inner(),
            t => t,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |ts: &[Type]| {
            ts.iter()
                .map(Type::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Type::Str => f.write_str("str"),
            Type::Bytes => f.write_str("bytes"),
            Type::Int => f.write_str("int"),
            Type::UInt => f.write_str("uint"),
            Type::Range(a, b) => write!(f, "int[{a}..{b}]"),
            Type::Float => f.write_str("float"),
            Type::Bool => f.write_str("bool"),
            Type::Date => f.write_str("date"),
            Type::Ms => f.write_str("ms"),
            Type::Name => f.write_str("name"),
            Type::Token => f.write_str("token"),
            Type::Prefix => f.write_str("prefix"),
            Type::Any => f.write_str("any"),
            Type::Null => f.write_str("null"),
            Type::Enum(w) => write!(f, "enum[{}]", w.join(", ")),
            Type::List(t) => write!(f, "list[{t}]"),
            Type::Opt(t) => write!(f, "opt[{t}]"),
            Type::Tuple(ts) => write!(f, "tuple[{}]", list(ts)),
            Type::Map(k, v) => write!(f, "map[{k}, {v}]"),
            Type::Named(n) => f.write_str(n),
        }
    }
}

impl From<Type> for String {
    fn from(t: Type) -> String {
        t.to_string()
    }
}

impl TryFrom<String> for Type {
    type Error = String;
    fn try_from(s: String) -> Result<Type, String> {
        let mut p = Parser::new(&s);
        let t = p.ty()?;
        p.end()?;
        Ok(t)
    }
}

fn try_parse(text: &str) -> Result<Api, (usize, String)> {
    let mut api = Api::default();
    // Whether indented lines belong to the last record (else the last class).
    let mut in_record = false;
    for (i, raw) in text.lines().enumerate() {
        let at = |e: String| (i + 1, e);
        let line = raw.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with(' ');
        let mut p = Parser::new(line.trim());
        let word = p.ident().map_err(at)?;
        match (indented, word.as_str()) {
            (false, "error") => {
                let name = p.ident().map_err(at)?;
                let fields = p.params().map_err(at)?;
                let doc = p.doc().map_err(at)?;
                let fields = fields
                    .into_iter()
                    .map(|f| Field {
                        name: f.name,
                        ty: f.ty,
                        doc: String::new(),
                    })
                    .collect();
                api.errors.push(ErrorDecl { name, fields, doc });
            }
            (false, "record" | "class") => {
                in_record = word == "record";
                let name = p.ident().map_err(at)?;
                let doc = p.doc().map_err(at)?;
                if in_record {
                    api.records.push(Record {
                        name,
                        doc,
                        fields: Vec::new(),
                    });
                } else {
                    api.classes.push(Class {
                        name,
                        doc,
                        new: None,
                        getters: Vec::new(),
                        ops: Vec::new(),
                    });
                }
            }
            (true, _) if in_record => {
                let r = api.records.last_mut().expect("in a record");
                p.expect(':').map_err(at)?;
                let ty = p.ty().map_err(at)?;
                let doc = p.doc().map_err(at)?;
                r.fields.push(Field {
                    name: word,
                    ty,
                    doc,
                });
            }
            (true, _) => {
                let c = api
                    .classes
                    .last_mut()
                    .ok_or_else(|| at("a member outside a class".into()))?;
                member(c, &word, &mut p).map_err(at)?;
            }
            (false, w) => return Err(at(format!("unknown declaration `{w}`"))),
        }
        p.end().map_err(at)?;
    }
    Ok(api)
}

/// A class's indented line: `new`, `get`, `op` or `static`.
fn member(c: &mut Class, word: &str, p: &mut Parser) -> Result<(), String> {
    match word {
        "new" => c.new = Some(p.params()?),
        "get" => {
            let name = p.ident()?;
            p.expect(':')?;
            let ty = p.ty()?;
            let doc = p.doc()?;
            c.getters.push(Field { name, ty, doc });
        }
        "op" | "static" | "fn" => {
            let name = p.ident()?;
            let params = p.params()?;
            p.expect_str("->")?;
            let returns = p.ty()?;
            let mut raises = Vec::new();
            if p.eat('!') {
                raises.push(p.ident()?);
                while p.eat(',') {
                    raises.push(p.ident()?);
                }
            }
            let doc = p.doc()?;
            c.ops.push(Operation {
                name,
                is_static: word == "static",
                pure: word == "fn",
                params,
                returns,
                raises,
                doc,
            });
        }
        w => return Err(format!("unknown member `{w}`")),
    }
    Ok(())
}

/// A small tokenizer over one line.
struct Parser<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Self { s, at: 0 }
    }

    fn rest(&self) -> &'a str {
        self.s[self.at..].trim_start()
    }

    fn skip(&mut self) {
        let rest = &self.s[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip();
        if self.s[self.at..].starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{c}` at `{}`", self.rest()))
        }
    }

    fn expect_str(&mut self, s: &str) -> Result<(), String> {
        self.skip();
        if self.s[self.at..].starts_with(s) {
            self.at += s.len();
            Ok(())
        } else {
            Err(format!("expected `{s}` at `{}`", self.rest()))
        }
    }

    fn end(&mut self) -> Result<(), String> {
        self.skip();
        if self.at == self.s.len() {
            Ok(())
        } else {
            Err(format!("unexpected `{}`", self.rest()))
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        self.skip();
        let rest = &self.s[self.at..];
        let n = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if n == 0 {
            return Err(format!("expected a name at `{rest}`"));
        }
        self.at += n;
        Ok(rest[..n].to_string())
    }

    fn int(&mut self) -> Result<i64, String> {
        self.skip();
        let rest = &self.s[self.at..];
        let n = rest
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
            .map_or(rest.len(), |(i, _)| i);
        let v = rest[..n]
            .parse()
            .map_err(|_| format!("expected an integer at `{rest}`"))?;
        self.at += n;
        Ok(v)
    }

    /// An optional trailing doc string (a JSON string literal).
    fn doc(&mut self) -> Result<String, String> {
        self.skip();
        if !self.s[self.at..].starts_with('"') {
            return Ok(String::new());
        }
        match self.literal()? {
            Value::String(s) => Ok(s),
            _ => unreachable!("a string literal"),
        }
    }

    /// A JSON literal: a string, number, `true`, `false` or `null`.
    fn literal(&mut self) -> Result<Value, String> {
        self.skip();
        let rest = &self.s[self.at..];
        let n = if rest.starts_with('"') {
            let mut esc = false;
            rest.char_indices()
                .skip(1)
                .find(|&(_, c)| {
                    let end = c == '"' && !esc;
                    esc = c == '\\' && !esc;
                    end
                })
                .map(|(i, _)| i + 1)
                .ok_or("an unclosed string")?
        } else {
            rest.find([',', ')', ' ']).unwrap_or(rest.len())
        };
        let v = serde_json::from_str(&rest[..n])
            .map_err(|e| format!("bad literal `{}`: {e}", &rest[..n]))?;
        self.at += n;
        Ok(v)
    }

    /// `(name: type [= default], ...)`
    fn params(&mut self) -> Result<Vec<Param>, String> {
        self.expect('(')?;
        let mut out = Vec::new();
        if self.eat(')') {
            return Ok(out);
        }
        loop {
            let name = self.ident()?;
            self.expect(':')?;
            let ty = self.ty()?;
            let default = if self.eat('=') {
                Some(self.literal()?)
            } else {
                None
            };
            out.push(Param { name, ty, default });
            if self.eat(')') {
                return Ok(out);
            }
            self.expect(',')?;
        }
    }

    fn ty(&mut self) -> Result<Type, String> {
        let word = self.ident()?;
        let simple = match word.as_str() {
            "str" => Some(Type::Str),
            "bytes" => Some(Type::Bytes),
            "uint" => Some(Type::UInt),
            "float" => Some(Type::Float),
            "bool" => Some(Type::Bool),
            "date" => Some(Type::Date),
            "ms" => Some(Type::Ms),
            "name" => Some(Type::Name),
            "token" => Some(Type::Token),
            "prefix" => Some(Type::Prefix),
            "any" => Some(Type::Any),
            "null" => Some(Type::Null),
            _ => None,
        };
        if let Some(t) = simple {
            return Ok(t);
        }
        let open = self.eat('[');
        let t = match (word.as_str(), open) {
            ("int", false) => Type::Int,
            ("int", true) => {
                let a = self.int()?;
                self.expect_str("..")?;
                Type::Range(a, self.int()?)
            }
            ("enum", true) => {
                let mut words = vec![self.ident()?];
                while self.eat(',') {
                    words.push(self.ident()?);
                }
                Type::Enum(words)
            }
            ("list", true) => Type::List(Box::new(self.ty()?)),
            ("opt", true) => Type::Opt(Box::new(self.ty()?)),
            ("tuple", true) => {
                let mut ts = vec![self.ty()?];
                while self.eat(',') {
                    ts.push(self.ty()?);
                }
                Type::Tuple(ts)
            }
            ("map", true) => {
                let k = self.ty()?;
                self.expect(',')?;
                Type::Map(Box::new(k), Box::new(self.ty()?))
            }
            (name, false) if name.starts_with(|c: char| c.is_ascii_uppercase()) => {
                Type::Named(name.to_string())
            }
            (w, _) => return Err(format!("unknown type `{w}`")),
        };
        if open {
            self.expect(']')?;
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_construct() {
        let api = Api::parse(
            "test",
            r#"
# comment
error Busy(key: str, retry_after_ms: opt[int]) "busy"
record Lease "a lease"
  token: str "the token"
  fence: int
class Lock "a lock"
  new(name: name, lease_ms: ms = 30000, mode: enum[a, b] = "a", n: int[1..10] = 1)
  get key: str "its key"
  op release(token: token) -> bool "releases"
  op acquire(timeout_ms: ms) -> Lease ! Busy, Timeout "waits"
  static open(items: list[tuple[bytes, uint]]) -> map[str, opt[Lock]]
"#,
        );
        assert_eq!(api.errors[0].fields[1].ty, Type::Opt(Box::new(Type::Int)));
        assert_eq!(api.records[0].fields.len(), 2);
        let c = &api.classes[0];
        let new = c.new.as_ref().unwrap();
        assert_eq!(new[1].default, Some(serde_json::json!(30000)));
        assert_eq!(new[3].ty, Type::Range(1, 10));
        assert_eq!(c.ops[1].raises, ["Busy", "Timeout"]);
        assert!(c.ops[2].is_static);
        assert_eq!(
            c.ops[2].returns.to_string(),
            "map[str, opt[Lock]]",
            "types print as they are written"
        );
        let json = serde_json::to_value(&api).unwrap();
        let back: Api = serde_json::from_value(json).unwrap();
        assert_eq!(back, api);
        let with_null = Api::parse("test", "class X\n  new(a: opt[int] = null)");
        let json = serde_json::to_string(&with_null).unwrap();
        assert_eq!(
            serde_json::from_str::<Api>(&json).unwrap(),
            with_null,
            "a null default stays a default"
        );
    }

    /// Every named type, raised error and record of every pattern's
    /// description resolves, and names are unique.
    #[test]
    fn every_description_resolves() {
        let errors = Api::errors();
        let all = crate::contract::PatternContract::all();
        let mut named: Vec<&str> = Vec::new();
        for c in &all {
            named.extend(c.api.records.iter().map(|r| r.name.as_str()));
            named.extend(c.api.classes.iter().map(|k| k.name.as_str()));
        }
        let mut sorted = named.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            named.len(),
            "record and class names are unique"
        );
        fn check(t: &Type, named: &[&str], at: &str) {
            match t {
                Type::Named(n) => assert!(named.contains(&n.as_str()), "{at}: unknown type {n}"),
                Type::List(t) | Type::Opt(t) => check(t, named, at),
                Type::Tuple(ts) => ts.iter().for_each(|t| check(t, named, at)),
                Type::Map(k, v) => {
                    check(k, named, at);
                    check(v, named, at);
                }
                _ => {}
            }
        }
        for c in &all {
            assert!(!c.api.classes.is_empty(), "{}: no class", c.name);
            for r in &c.api.records {
                r.fields.iter().for_each(|f| check(&f.ty, &named, &r.name));
            }
            for k in &c.api.classes {
                for op in &k.ops {
                    let at = format!("{}.{}", k.name, op.name);
                    check(&op.returns, &named, &at);
                    op.params.iter().for_each(|p| check(&p.ty, &named, &at));
                    for e in &op.raises {
                        assert!(
                            errors.errors.iter().any(|d| &d.name == e),
                            "{at} raises {e}, which errors.api does not declare"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn refuses_malformed_lines() {
        for bad in [
            "class X\n  op f( -> int",
            "klass X",
            "class X\n  op f() -> huh",
            "class X\n  new(a: int = )",
        ] {
            assert!(try_parse(bad).is_err(), "{bad}");
        }
    }
}
