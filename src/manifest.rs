//! The JSON manifest that `redis-patterns export` writes beside the scripts:
//! the complete contract for Python, Node, PHP and Java clients. Field names
//! are fixed; [`Manifest::VERSION`] changes when they do. Its JSON Schema is
//! `manifest.schema.json` at the repository root (the tests validate every
//! manifest against it).
//!
//! From the script headers it carries what the scripts check: each
//! argument's type, range and constraints, each key's Redis type and whether
//! the script writes it, and the commands a script calls, so that another
//! language can validate a call the same way before sending it, and set up
//! ACL users. From [`crate::contract`] it carries what a client computes
//! itself: per pattern the key templates, client-side functions, constants
//! and multi-step protocols, and the meaning of every error code.

use serde::{Deserialize, Serialize};

use crate::contract::PatternContract;
use crate::script::{Bound, Idempotency};

/// `manifest.json`: a JSON document (its field names are fixed and
/// described by `manifest.schema.json`); read it as JSON, its Rust fields
/// are how this crate writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The format's version, [`Manifest::VERSION`].
    pub(crate) manifest_version: u32,
    /// The crate version that exported the scripts.
    pub(crate) version: String,
    /// Every script, by name.
    pub(crate) scripts: Vec<ScriptEntry>,
    /// Per pattern, what a client computes itself ([`crate::contract`]).
    pub(crate) patterns: Vec<PatternContract>,
    /// Every domain error code of the scripts.
    pub(crate) errors: Vec<ErrorEntry>,
    /// Every error kind a client raises, with its data
    /// ([`crate::contract::api::Api::errors`]).
    pub(crate) error_kinds: Vec<crate::contract::api::ErrorDecl>,
    /// What a client detects of the server once per connection
    /// ([`crate::core::caps`]), by the names `redis-patterns info --json`
    /// reports.
    pub(crate) capabilities: Vec<CapabilityEntry>,
}

impl Manifest {
    /// The version of the manifest's format (separate from the crate version):
    /// 2 added `manifest_version`, `patterns`, `errors` and the keys' and
    /// arguments' `meaning` and `variadic`; 3 added the scripts' `idempotent`;
    /// 4 added the patterns' `api` and `error_kinds` (the client API); 5
    /// added `capabilities`; 6 added the scripts' `needs`.
    pub const VERSION: u32 = 6;

    /// The manifest of the embedded bundle.
    pub fn bundled() -> Manifest {
        Manifest {
            manifest_version: Manifest::VERSION,
            version: env!("CARGO_PKG_VERSION").to_string(),
            patterns: crate::contract::PatternContract::all(),
            errors: crate::contract::ErrorCode::ALL
                .iter()
                .map(|e| ErrorEntry {
                    code: e.code.into(),
                    kind: e.kind.into(),
                    detail: e.detail.into(),
                    meaning: e.meaning.into(),
                })
                .collect(),
            error_kinds: crate::contract::api::Api::errors().errors,
            capabilities: capabilities(),
            scripts: crate::scripts::ALL
                .iter()
                .map(|s| ScriptEntry {
                    name: s.name.into(),
                    pattern: s.name.split('.').next().unwrap_or_default().into(),
                    file: s.file.into(),
                    sha1: s.sha1.into(),
                    function: s.function.into(),
                    keys: s.keys.iter().map(|k| tail(k.name, k.variadic)).collect(),
                    key_specs: s
                        .keys
                        .iter()
                        .map(|k| KeyEntry {
                            name: tail(k.name, k.variadic),
                            types: k.types.iter().map(|t| t.name().to_string()).collect(),
                            written: k.written,
                            variadic: k.variadic,
                            meaning: k.doc.into(),
                        })
                        .collect(),
                    args: s
                        .args
                        .iter()
                        .map(|a| ArgEntry {
                            name: tail(a.name, a.variadic),
                            ty: a.ty.name().into(),
                            min: bound(a.min),
                            max: bound(a.max),
                            non_empty: a.non_empty,
                            tagged: a.tagged,
                            values: strings(a.values),
                            reason: a.reason.into(),
                            variadic: a.variadic,
                            meaning: a.doc.into(),
                        })
                        .collect(),
                    returns: format!("{}: {}", s.returns, s.returns_doc),
                    read_only: s.read_only,
                    description: s.summary.into(),
                    errors: strings(s.errors),
                    writes: strings(s.writes),
                    reads: strings(s.reads),
                    idempotent: IdempotentEntry {
                        when: match s.idempotent {
                            Idempotency::Always => "always",
                            Idempotency::Never => "never",
                            Idempotency::IfArg { .. } => "if_arg",
                        }
                        .into(),
                        arg: match s.idempotent {
                            Idempotency::IfArg { name, .. } => Some(name.into()),
                            _ => None,
                        },
                        why: s.idempotent_doc.into(),
                    },
                    needs: strings(s.needs),
                })
                .collect(),
        }
    }
}

/// One server capability ([`crate::core::Capability`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CapabilityEntry {
    /// The capability's name (`bitop_diff`).
    pub name: String,
    /// The server has it when it has every one of these (`BITOP DIFF`: an
    /// operator of `BITOP`).
    pub commands: Vec<String>,
    /// How a client detects it.
    pub detect: String,
    /// What a pattern may do with it.
    pub meaning: String,
}

/// Every capability of [`Capability::ALL`](crate::core::Capability::ALL).
fn capabilities() -> Vec<CapabilityEntry> {
    crate::core::Capability::ALL
        .iter()
        .map(|c| CapabilityEntry {
            name: c.name.into(),
            commands: strings(c.commands),
            detect: detect_text(c),
            meaning: c.meaning.into(),
        })
        .collect()
}

/// How a client detects `cap`: `COMMAND INFO` of its commands, or the
/// operator tokens of `COMMAND DOCS BITOP`.
fn detect_text(cap: &crate::core::Capability) -> String {
    if cap.commands.iter().all(|c| c.starts_with("BITOP ")) {
        let ops: Vec<&str> = cap.commands.iter().map(|c| &c[6..]).collect();
        format!(
            "COMMAND DOCS BITOP lists every one of {} as a token of its operation argument",
            ops.join(", ")
        )
    } else {
        format!(
            "COMMAND INFO {} answers no nil (a nil is a command the server does not have)",
            cap.commands.join(" ")
        )
    }
}

/// One domain error code (`-CODE detail` replies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorEntry {
    /// The code (`BADARG`, `FULL` ...).
    pub code: String,
    /// The Rust `ErrorKind` it maps to (and the generated clients' exception).
    pub kind: String,
    /// What the text after the code says.
    pub detail: String,
    /// What it means.
    pub meaning: String,
}

/// One script of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScriptEntry {
    /// `<pattern>.<op>`
    pub name: String,
    /// The pattern (the part before the dot).
    pub pattern: String,
    /// Path relative to the manifest, `<pattern>/<op>.lua`.
    pub file: String,
    /// SHA1 of the file (the shipped script): the `EVALSHA` handle.
    pub sha1: String,
    /// Its function in the Functions library `functions.lua`
    /// (`<pattern>_<op>`): the `FCALL` / `FCALL_RO` handle.
    pub function: String,
    /// Key names in `KEYS` order; a trailing `..` marks a variadic tail.
    pub keys: Vec<String>,
    /// The keys in `KEYS` order, with their types.
    pub key_specs: Vec<KeyEntry>,
    /// The arguments in `ARGV` order, with their checks.
    pub args: Vec<ArgEntry>,
    /// Reply type and meaning, e.g. `integer: 1 when released, 0 ...`.
    pub returns: String,
    /// Call with `EVALSHA_RO` (and allowed on replicas).
    pub read_only: bool,
    /// What the script does (its header's summary).
    pub description: String,
    /// Domain error codes (`-CODE detail` replies) the script may raise;
    /// `BADARG <arg name> <reason>` for an argument outside its declaration.
    pub errors: Vec<String>,
    /// The write commands the script calls.
    pub writes: Vec<String>,
    /// The other commands its body calls (its checks may also call `TYPE`).
    pub reads: Vec<String>,
    /// Whether a client may send the call again when its outcome is unknown
    /// (the connection died after the request was written).
    pub idempotent: IdempotentEntry,
    /// The capabilities (of `capabilities`) the script's commands need: a
    /// client calls it only on a server that has all of them (absent: every
    /// server runs it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
}

/// Whether a call may be resent after an unknown outcome, from the header's
/// `IDEMPOTENT`: `{"when": "always"}`, `{"when": "never"}`, or
/// `{"when": "if_arg", "arg": "request_ttl_ms"}` (safe exactly when that
/// argument is neither empty nor `0`), with the header's reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IdempotentEntry {
    /// `always` | `never` | `if_arg`
    pub when: String,
    /// The argument that decides, for `if_arg`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<String>,
    /// Why a resend is or is not safe.
    pub why: String,
}

/// One `KEYS` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeyEntry {
    /// Name; a trailing `..` marks a variadic tail.
    pub name: String,
    /// The Redis type the key must hold (or be missing): string | hash |
    /// set | zset | list | stream | any. A variadic tail's keys cycle
    /// through the list (`["hash", "list"]`: hash, list, hash, ...).
    pub types: Vec<String>,
    /// Whether the script may write the key.
    pub written: bool,
    /// The last key entry may stand for any number of keys.
    #[serde(default)]
    pub variadic: bool,
    /// What the key is, from the header.
    #[serde(default)]
    pub meaning: String,
}

/// One end of an integer range: a number, or another argument's value plus
/// an offset (`{"arg": "shards", "offset": -1}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum BoundEntry {
    /// A number.
    Value(i64),
    /// Another argument's value plus an offset.
    Arg {
        /// The argument it names.
        arg: String,
        /// Added to that argument's value.
        offset: i64,
    },
}

/// One `ARGV` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArgEntry {
    /// Name; a trailing `..` marks a variadic tail (each element is checked).
    pub name: String,
    /// integer | int64 | float | bool | enum | string | bytes. Integers are
    /// canonical decimal (no `+`, leading zeros, spaces or exponent).
    #[serde(rename = "type")]
    pub ty: String,
    /// Smallest value of an integer (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<BoundEntry>,
    /// Largest value of an integer (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<BoundEntry>,
    /// A string or bytes argument that must not be empty.
    #[serde(default)]
    pub non_empty: bool,
    /// A string or bytes argument that must carry the hash tag of the first
    /// key (a shard channel in the call's slot); also not empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tagged: bool,
    /// The words an enum accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// The reason of a refusal, as in `BADARG <name> <reason>`; empty when
    /// every value is accepted.
    #[serde(default)]
    pub reason: String,
    /// The last argument entry may stand for any number of arguments.
    #[serde(default)]
    pub variadic: bool,
    /// What the argument is, from the header.
    #[serde(default)]
    pub meaning: String,
}

fn tail(name: &str, variadic: bool) -> String {
    if variadic {
        format!("{name}..")
    } else {
        name.to_string()
    }
}

fn bound(b: Option<Bound>) -> Option<BoundEntry> {
    b.map(|b| match b {
        Bound::Value(v) => BoundEntry::Value(v),
        Bound::Arg { name, offset } => BoundEntry::Arg {
            arg: name.to_string(),
            offset,
        },
    })
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}
