//! The JSON manifest that `redis-patterns export` writes beside the scripts:
//! the contract for Python, Node, PHP and Java clients. Field names are fixed.

use serde::{Deserialize, Serialize};

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The crate version that exported the scripts.
    pub version: String,
    pub scripts: Vec<ScriptEntry>,
}

/// One script of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptEntry {
    /// `<pattern>.<op>`
    pub name: String,
    /// Path relative to the manifest, `<pattern>/<op>.lua`.
    pub file: String,
    /// SHA1 of the file: the `EVALSHA` handle.
    pub sha1: String,
    /// Key names in `KEYS` order; a trailing `..` marks a variadic tail.
    pub keys: Vec<String>,
    pub args: Vec<ArgEntry>,
    /// Reply type and meaning, e.g. `integer: 1 when released, 0 ...`.
    pub returns: String,
    /// Call with `EVALSHA_RO` (and allowed on replicas).
    pub read_only: bool,
    pub description: String,
    /// Domain error codes (`-CODE detail` replies) the script may raise.
    pub errors: Vec<String>,
}

/// One `ARGV` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgEntry {
    /// Name; a trailing `..` marks a variadic tail.
    pub name: String,
    /// integer | float | string | bytes
    #[serde(rename = "type")]
    pub ty: String,
}

fn tail(name: &str, variadic: bool) -> String {
    if variadic {
        format!("{name}..")
    } else {
        name.to_string()
    }
}

/// The manifest of the embedded bundle.
pub fn manifest() -> Manifest {
    Manifest {
        version: env!("CARGO_PKG_VERSION").to_string(),
        scripts: crate::scripts::ALL
            .iter()
            .map(|s| ScriptEntry {
                name: s.name.into(),
                file: s.file.into(),
                sha1: s.sha1.into(),
                keys: s.keys.iter().map(|k| tail(k.name, k.variadic)).collect(),
                args: s
                    .args
                    .iter()
                    .map(|a| ArgEntry {
                        name: tail(a.name, a.variadic),
                        ty: a.ty.name().into(),
                    })
                    .collect(),
                returns: format!("{}: {}", s.returns, s.returns_doc),
                read_only: s.read_only,
                description: s.summary.into(),
                errors: s.errors.iter().map(|e| e.to_string()).collect(),
            })
            .collect(),
    }
}
