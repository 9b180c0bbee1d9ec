//! What a client in another language needs beyond the script headers, in
//! one place: per pattern, how every key is named (templates), the
//! client-side functions with exact definitions, the constants they use, the
//! multi-step protocols, and the meaning of every error code.
//!
//! The headers say what each script takes and checks; this module says how
//! a client computes the keys and arguments it passes. Each pattern's
//! contract lives next to its code (`src/<pattern>/contract.rs`), and the
//! tests prove that the pattern's Rust code agrees with it (the key a
//! template renders for a name is the key the pattern computes). The
//! manifest ([`crate::manifest`]), the README and the generated Python and
//! PHP clients all read it from here.
//!
//! # Key templates
//!
//! A template is the key's text with `<var>` placeholders: `<var>` is
//! replaced by the variable's text, everything else is literal (braces are
//! the Redis Cluster hash tag). [`render`] does it:
//!
//! ```
//! use redis_patterns::contract::render;
//!
//! let key = render("<prefix>{<name>}:fence", &[("prefix", "redis:lock:"), ("name", "job")]);
//! assert_eq!(key, "redis:lock:{job}:fence");
//! ```

pub mod api;
mod errors;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use errors::{ERROR_CODES, ErrorCode};

/// Everything about one pattern that a client computes itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternContract {
    /// The pattern, as in script names (`lock` for `lock.acquire`).
    pub name: String,
    /// What the pattern is, in one line.
    pub summary: String,
    /// The pattern's scripts (`lock.acquire`, ...).
    pub scripts: Vec<String>,
    /// What a client chooses when it sets the pattern up (prefix, shard
    /// count, ...), with defaults.
    pub params: Vec<Param>,
    /// How each key is named.
    pub keys: Vec<KeyTemplate>,
    /// Values the functions and protocols use.
    pub constants: Vec<Constant>,
    /// Client-side computations, precise enough to port bit for bit.
    pub functions: Vec<Function>,
    /// Operations of more than one script call, or of a call and a rule for
    /// its answer.
    pub protocols: Vec<Protocol>,
    /// The public API every client exposes: classes, operations, records
    /// ([`api`], from `src/<pattern>/client.api`).
    pub api: api::Api,
}

/// A setting a client chooses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// The setting's name (`prefix`, `shards`).
    pub name: String,
    /// `string`, `integer`, `number`, `bool`, `duration_ms`, `date`,
    /// `time_zone`.
    #[serde(rename = "type")]
    pub ty: String,
    /// The default, `null` when the setting is required.
    pub default: Value,
    /// What it means.
    pub meaning: String,
}

/// How one kind of key is named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyTemplate {
    /// The key's role; scripts name it in their `KEYS` (`lock`, `fence`).
    pub role: String,
    /// `<var>` placeholders in literal text (see the module docs).
    pub template: String,
    /// The Redis type it holds.
    #[serde(rename = "type")]
    pub ty: String,
    /// What the key holds.
    pub meaning: String,
}

/// A value a client uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constant {
    /// The constant's name (`max_lease_ms`).
    pub name: String,
    /// Its value.
    pub value: Value,
    /// What it means.
    pub meaning: String,
}

/// A client-side computation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// The function's name (`shard_of`).
    pub name: String,
    /// `name(arg: type, ...) -> type`
    pub signature: String,
    /// The exact definition, one step per line.
    pub definition: Vec<String>,
    /// Where reference values are (repository paths), when there are some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vectors: Vec<String>,
}

/// A multi-step client protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Protocol {
    /// The protocol's name (`acquire`).
    pub name: String,
    /// The scripts (and commands) it uses.
    pub uses: Vec<String>,
    /// What the client does, in order.
    pub steps: Vec<String>,
}

/// `template` with every `<var>` replaced by its value in `vars`.
///
/// # Panics
///
/// When the template names a variable `vars` does not have, or has an
/// unclosed `<` (a contract bug, caught by the tests).
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('>')
            .unwrap_or_else(|| panic!("unclosed `<` in template {template}"))
            + open;
        let var = &rest[open + 1..close];
        let value = vars
            .iter()
            .find(|(name, _)| *name == var)
            .unwrap_or_else(|| panic!("template {template} needs <{var}>"))
            .1;
        out.push_str(value);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Every key template of `contract` rendered with `vars`, in order.
#[cfg(test)]
pub(crate) fn render_keys(contract: &PatternContract, vars: &[(&str, &str)]) -> Vec<String> {
    contract
        .keys
        .iter()
        .map(|k| render(&k.template, vars))
        .collect()
}

/// The variables a template names, in order of first appearance.
pub fn template_vars(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let var = &rest[open + 1..open + close];
        if !out.contains(&var) {
            out.push(var);
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// The contract of every pattern, sorted by name.
pub fn all() -> Vec<PatternContract> {
    let mut out = vec![
        crate::bloom::contract(),
        crate::expiring_map::contract(),
        crate::layout::contract(),
        crate::lock::contract(),
        crate::login_log::contract(),
        crate::packed::contract(),
        crate::rate_limit::contract(),
        crate::rolling::contract(),
        crate::rwlock::contract(),
        crate::semaphore::contract(),
        crate::sharded_hash::contract(),
        crate::signin::contract(),
        crate::visits::contract(),
    ];
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Small constructors for the contracts' tables.
pub(crate) fn param(name: &str, ty: &str, default: Value, meaning: &str) -> Param {
    Param {
        name: name.into(),
        ty: ty.into(),
        default,
        meaning: meaning.into(),
    }
}

/// The `prefix` param of a pattern whose keys carry a hash tag after it,
/// with its default.
pub(crate) fn prefix_param(default: &str) -> Param {
    param(
        "prefix",
        "string",
        Value::from(default),
        "what every key starts with (no `{` or `}`)",
    )
}

/// The required `name` param of a named resource (`what`: `lock`,
/// `counter` ...), the hash tag of its keys.
pub(crate) fn name_param(what: &str) -> Param {
    param(
        "name",
        "string",
        Value::Null,
        &format!("the {what}'s name: not empty, no `{{` or `}}`"),
    )
}

pub(crate) fn key(role: &str, template: &str, ty: &str, meaning: &str) -> KeyTemplate {
    KeyTemplate {
        role: role.into(),
        template: template.into(),
        ty: ty.into(),
        meaning: meaning.into(),
    }
}

pub(crate) fn constant(name: &str, value: impl Into<Value>, meaning: &str) -> Constant {
    Constant {
        name: name.into(),
        value: value.into(),
        meaning: meaning.into(),
    }
}

pub(crate) fn function(name: &str, signature: &str, definition: &[&str]) -> Function {
    Function {
        name: name.into(),
        signature: signature.into(),
        definition: lines(definition),
        vectors: Vec::new(),
    }
}

pub(crate) fn protocol(name: &str, uses: &[&str], steps: &[&str]) -> Protocol {
    Protocol {
        name: name.into(),
        uses: lines(uses),
        steps: lines(steps),
    }
}

pub(crate) fn lines(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The names of the registry's scripts of `pattern`.
pub(crate) fn scripts_of(pattern: &str) -> Vec<String> {
    crate::scripts::ALL
        .iter()
        .filter(|s| s.name.split('.').next() == Some(pattern))
        .map(|s| s.name.to_string())
        .collect()
}

/// The functions several patterns share.
pub(crate) mod shared {
    use super::{Function, function};

    /// `crc32(bytes) -> u32`: the shard function of visits and sharded_hash.
    pub(crate) fn crc32() -> Function {
        function(
            "crc32",
            "crc32(data: bytes) -> u32",
            &[
                "CRC-32/ISO-HDLC (zlib, PNG, PHP crc32(), Python zlib.crc32()): reflected polynomial 0xEDB88320,",
                "initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF; crc32(\"123456789\") = 0xCBF43926 = 3421780262",
            ],
        )
    }

    /// `request_key`: the key that remembers one call with a request id,
    /// in the slot of the key it changes (`RequestId::key_for`).
    pub(crate) fn request_key() -> Function {
        function(
            "request_key",
            "request_key(key: string, request_id: string) -> string",
            &[
                "<key>:req:<request_id> when key has a hash tag (a `{` followed later by a `}` with something between),",
                "otherwise {<key>}:req:<request_id> (refused when key then contains `}`); without a request id the scripts",
                "take request_key(key, \"\") minus its last `:` (key:req or {key}:req), untouched, and request_ttl_ms 0;",
                "request_id: 1 to 200 bytes; request_ttl_ms: how long the result is remembered (default 3600000)",
            ],
        )
    }

    /// `expire_at`: end of a period plus a retention.
    pub(crate) fn expire_at() -> Function {
        function(
            "expire_at",
            "expire_at(period_end: unix seconds, retention: forever | seconds) -> integer",
            &[
                "forever -> 0 (the scripts read 0 as: no TTL)",
                "otherwise period_end + retention seconds, which must be > 0 and <= 999999999999999",
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_render_and_list_their_variables() {
        let t = "<prefix>{<name>:<YYYY-MM-DD>}:<shard>";
        assert_eq!(template_vars(t), ["prefix", "name", "YYYY-MM-DD", "shard"]);
        assert_eq!(
            render(
                t,
                &[
                    ("prefix", "visits:"),
                    ("name", "site"),
                    ("YYYY-MM-DD", "2024-02-29"),
                    ("shard", "7")
                ]
            ),
            "visits:{site:2024-02-29}:7"
        );
    }

    #[test]
    fn every_contract_is_complete() {
        let all = all();
        let mut patterns: Vec<&str> = crate::scripts::ALL
            .iter()
            .filter_map(|s| s.name.split('.').next())
            .collect();
        patterns.dedup();
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, patterns, "one contract per pattern");
        for c in &all {
            assert_eq!(c.scripts, scripts_of(&c.name));
            assert!(!c.keys.is_empty(), "{}", c.name);
            for k in &c.keys {
                // Every template variable is a parameter of the pattern or
                // named in the template list of variables below.
                for var in template_vars(&k.template) {
                    assert!(
                        c.params.iter().any(|p| p.name == var) || KNOWN_VARS.contains(&var),
                        "{}: key {} uses <{var}>, which is neither a param nor a known variable",
                        c.name,
                        k.role
                    );
                }
            }
            for s in crate::scripts::ALL
                .iter()
                .filter(|s| c.scripts.iter().any(|n| n == s.name))
            {
                for k in s.keys {
                    assert!(
                        c.keys.iter().any(|t| t.role == k.name) || VARIABLE_ROLES.contains(&k.name),
                        "{}: key {} of {} has no template",
                        c.name,
                        k.name,
                        s.name
                    );
                }
            }
        }
    }

    /// Template variables that are not settings: computed per call.
    const KNOWN_VARS: &[&str] = &[
        "name",
        "YYYY-MM-DD",
        "YYYY-MM",
        "YYYYMMDD",
        "shard",
        "slot",
        "j",
        "key",
        "type",
        "uid",
        "hex16",
        "base",
        "tag",
        "request_id",
    ];

    /// Script key roles that stand for several templated keys (variadic
    /// tails whose keys each have a template of another role).
    const VARIABLE_ROLES: &[&str] = &[
        "shards", "slots", "hashes", "blocks", "block", "days", "counter", "bitmap", "day",
    ];
}
