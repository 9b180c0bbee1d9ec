//! The generated clients of `redis-patterns export --lang python|php|typescript
//! DIR`: a Python package (redis-py, sync and `redis.asyncio`), a PHP library
//! (phpredis, PSR-4) and a Node package (ioredis, TypeScript), all generated from the same script headers (the
//! registry: one typed method per script, validating its arguments like the
//! header says) and the same contracts (`redis_patterns::contract`: key
//! templates, constants, error codes). The pattern helpers (shard keys,
//! JSHash, sized-filter offsets and block planning, the rolling retry, lock
//! tokens, ...) are this crate's per-language sources under
//! `src/clients/<lang>/`, which read every value they need from the
//! generated files.
//!
//! Every client ships the bundle's scripts (for `SCRIPT LOAD` after
//! `NOSCRIPT`) and the manifest.
//!
//! # The architecture every client follows
//!
//! * **One description** of the public API of every pattern
//!   ([`redis_patterns::contract::api`], `src/<pattern>/client.api` next to
//!   the pattern's Rust code): classes, settings, accessors, operations with
//!   typed and optional inputs, results (records) and errors with their
//!   data. The conformance suite (`tests/conformance.rs`) fails when the
//!   Rust API and the description disagree.
//! * **One walk, a spelling per language**: `surface` walks the
//!   description and asks the language's `Surface` implementation for each
//!   piece (a type, an input check, an error class, a record, a class, an
//!   operation); `syntax` does the same for the script calls and contract
//!   tables. A new language is one more implementation of both traits.
//! * **One runtime per language**, hand-written where the description does
//!   not reach: the drivers (sync and async, standalone and cluster, one
//!   pipeline per node), the input checks the emitted code calls, the
//!   protocols (notified waiting, the hold's renewal, the rolling retry,
//!   hashing, day math) and each pattern's operation bodies.
//! * **One conformance suite** (`tests/conformance/cases.json`) that every
//!   client runs on a server and a cluster, plus cross-language cases.

mod php;
mod python;
mod surface;
mod syntax;
mod typescript;

use std::path::Path;

use redis_patterns::script::ScriptInfo;
use redis_patterns::scripts::ALL;

/// A language the CLI generates a client for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Python package, `redis_patterns` (redis-py; sync and asyncio).
    Python,
    /// A PHP library, namespace `RedisPatterns` (phpredis; PSR-4).
    Php,
    /// A Node package, `redis-patterns` (ioredis; TypeScript sources,
    /// CommonJS modules and declarations).
    Typescript,
}

impl Lang {
    /// The language's name.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Python => "Python",
            Lang::Php => "PHP",
            Lang::Typescript => "TypeScript",
        }
    }
}

/// A generated file: its path below the output directory and its text.
pub struct File {
    pub path: String,
    pub text: String,
}

/// Every file of the client for `lang`.
pub fn files(lang: Lang) -> Vec<File> {
    match lang {
        Lang::Python => python::files(),
        Lang::Php => php::files(),
        Lang::Typescript => typescript::files(),
    }
}

/// Writes the client for `lang` into `dir`; returns what it wrote.
pub fn write(lang: Lang, dir: &Path) -> std::io::Result<usize> {
    let files = files(lang);
    for f in &files {
        let path = dir.join(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &f.text)?;
    }
    Ok(files.len())
}

/// The bundle's shipped scripts and the manifest, below `root`.
fn bundle(root: &str) -> Vec<File> {
    let mut out: Vec<File> = ALL
        .iter()
        .map(|s| File {
            path: format!("{root}lua/{}", s.file),
            text: s.source().to_string(),
        })
        .collect();
    let manifest = serde_json::to_string_pretty(&redis_patterns::manifest::Manifest::bundled())
        .expect("the manifest serializes");
    out.push(File {
        path: format!("{root}manifest.json"),
        text: manifest + "\n",
    });
    out
}

/// `lock.acquire` -> `Lock`, `sharded_hash` -> `ShardedHash`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// A script's pattern and operation: `lock.acquire` is (`lock`, `acquire`).
fn pattern_op(s: &ScriptInfo) -> (&'static str, &'static str) {
    s.name.split_once('.').expect("pattern.op")
}

/// The patterns of the bundle, in registry order.
fn patterns() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = ALL.iter().map(|s| pattern_op(s).0).collect();
    out.dedup();
    out
}

/// The scripts of `pattern`, in registry order.
fn scripts_of(pattern: &str) -> impl Iterator<Item = &'static ScriptInfo> + '_ {
    ALL.iter()
        .copied()
        .filter(move |s| pattern_op(s).0 == pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(camel("sharded_hash"), "ShardedHash");
        assert_eq!(camel("lock"), "Lock");
        assert!(patterns().contains(&"bloom"));
    }
}
