//! The parts a pattern's contract is built of — its keys, params,
//! constants, functions and protocols — with their small constructors and
//! the key templates' renderer: what each `src/<pattern>/contract.rs` uses,
//! below the registry ([`super::all`]) that lists them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::api;

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

impl PatternContract {
    /// The contract of pattern `name`: its summary, its scripts (the
    /// registry's `name.*`) and its client API (`api`, the text of its
    /// `client.api`), with empty tables for the pattern to fill
    /// (`PatternContract { keys: keys(), ..PatternContract::of(...) }`).
    pub(crate) fn of(name: &str, summary: &str, api: &str) -> Self {
        Self {
            name: name.into(),
            summary: summary.into(),
            scripts: scripts_of(name),
            params: vec![],
            keys: vec![],
            constants: vec![],
            functions: vec![],
            protocols: vec![],
            api: api::Api::parse(name, api),
        }
    }
}

/// Writes a pattern's `pub(crate) fn contract()` from its name, its summary
/// and the tables its module fills: each table named is filled by the
/// calling module's function of that name (`keys` by `keys()`), the others
/// stay empty; the client API is the `client.api` beside the calling file.
///
/// ```ignore
/// pattern_contract! {
///     "packed", "fixed-width records per integer id, packed into sharded strings";
///     params, keys, constants, functions, protocols
/// }
/// ```
macro_rules! pattern_contract {
    ($name:literal, $summary:literal; $($table:ident),+ $(,)?) => {
        pub(crate) fn contract() -> $crate::contract::PatternContract {
            $crate::contract::PatternContract {
                $($table: $table(),)+
                ..$crate::contract::PatternContract::of($name, $summary, include_str!("client.api"))
            }
        }
    };
}
pub(crate) use pattern_contract;

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

impl KeyTemplate {
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

/// Every key template of `contract` rendered with `vars`, in order.
#[cfg(test)]
pub(crate) fn render_keys(contract: &PatternContract, vars: &[(&str, &str)]) -> Vec<String> {
    contract
        .keys
        .iter()
        .map(|k| KeyTemplate::render(&k.template, vars))
        .collect()
}

/// The variables a template names, in order of first appearance.
#[cfg(test)]
pub(crate) fn template_vars(template: &str) -> Vec<&str> {
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

/// Small constructors for the contracts' tables.
pub(crate) fn param(name: &str, ty: &str, default: Value, meaning: &str) -> Param {
    Param {
        name: name.into(),
        ty: ty.into(),
        default,
        meaning: meaning.into(),
    }
}

/// A setting a client must choose: no default.
pub(crate) fn required_param(name: &str, ty: &str, meaning: &str) -> Param {
    param(name, ty, Value::Null, meaning)
}

/// The `prefix` param of a pattern whose keys carry a hash tag after it,
/// with its default.
pub(crate) fn prefix_param(default: &str) -> Param {
    prefix_param_meaning(default, "what every key starts with (no `{` or `}`)")
}

/// The `prefix` param of a bitmap pattern (whose keys are also typed at a
/// console: no whitespace either), with its default.
pub(crate) fn bitmap_prefix_param(default: &str) -> Param {
    prefix_param_meaning(
        default,
        "what every key starts with (no whitespace, no `{` or `}`)",
    )
}

/// The `prefix` param with its default and a pattern's own meaning.
pub(crate) fn prefix_param_meaning(default: &str, meaning: &str) -> Param {
    param("prefix", "string", Value::from(default), meaning)
}

/// The required `base` param of a sharded pattern, the name its keys start
/// with (`what`: `the logical hash's name`).
pub(crate) fn base_param(what: &str) -> Param {
    required_param("base", "string", &format!("{what}, not empty"))
}

/// The required `name` param of a named resource (`what`: `lock`,
/// `counter` ...), the hash tag of its keys.
pub(crate) fn name_param(what: &str) -> Param {
    required_param(
        "name",
        "string",
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
