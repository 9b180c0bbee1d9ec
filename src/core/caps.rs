//! What a server can do ([`Caps`]), detected once per connection: its name
//! and version from `INFO server`, and which of the commands the patterns
//! may use it has (`COMMAND INFO` of each; the newer `BITOP` operators from
//! `COMMAND DOCS BITOP`).
//!
//! Both drivers detect it the same way: the first operation a connection
//! runs first runs the detection (one round trip: `INFO server`, `COMMAND
//! INFO …`, `COMMAND DOCS BITOP`), and the connection keeps the answer for
//! every later operation (clones made after that, and
//! [`Connection::try_clone`](crate::Connection::try_clone), copy it; an
//! async clone made before detects once for itself). An operation reads it
//! from its [`Env`](super::Env) ([`Env::caps`](super::Env::caps)); a caller with
//! [`Caps::read`] or
//! `caps()`, or with `redis-patterns info --json`; `set_caps` sets it
//! instead (e.g. [`Caps::without`] a capability while a cluster is upgraded
//! node by node: the nodes asked may not be the ones a call reaches).
//!
//! **Nothing is inferred from `redis_version` alone**: Valkey reports
//! `redis_version:7.2.4` for compatibility beside `server_name:valkey` and
//! `valkey_version`, so the version is `<server_name>_version` when the
//! server names itself, and a capability is whether the server knows the
//! command, never a version comparison.
//!
//! A script that has a faster path on a newer server chooses it in Lua by
//! an argument that the client derives from these capabilities (see
//! [`Capability`]): the script's SHA1 never depends on the server.
//!
//! A server that refuses `INFO` or `COMMAND` (an ACL, a managed service)
//! gets [`Caps::default`] for what it did not say: no newer command, so
//! every pattern takes the path every server has.

use redis::Value;
use serde::Serialize;

/// A capability: a set of commands (or `BITOP` operators) a pattern may use
/// when the server has all of them, with a path for servers without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    /// The field of [`Caps`] and the name in the manifest and in
    /// `redis-patterns info --json` (`hash_field_ttl`).
    pub name: &'static str,
    /// The commands it needs, as `COMMAND INFO` names them; `BITOP DIFF`
    /// stands for an operator of `BITOP`, read from `COMMAND DOCS BITOP`.
    pub commands: &'static [&'static str],
    /// What it is, and which servers have it.
    pub meaning: &'static str,
}

impl Capability {
    /// Every capability the crate detects, in [`Caps`]'s field order.
    pub const ALL: &'static [Capability] = &[
        Capability {
            name: "hash_field_ttl",
            commands: &["HEXPIRE", "HPEXPIRE", "HPEXPIREAT", "HPTTL", "HPERSIST"],
            meaning: "hash fields with their own TTL (Redis >= 7.4, Valkey >= 9.0)",
        },
        Capability {
            name: "hash_getex",
            commands: &["HGETEX", "HSETEX"],
            meaning: "reading or writing hash fields together with their TTL (Redis >= 8.0, Valkey >= 9.0)",
        },
        Capability {
            name: "bitop_diff",
            commands: &["BITOP DIFF", "BITOP DIFF1", "BITOP ANDOR", "BITOP ONE"],
            meaning: "BITOP's DIFF, DIFF1, ANDOR and ONE operators (Redis >= 8.2)",
        },
        Capability {
            name: "delifeq",
            commands: &["DELIFEQ"],
            meaning: "delete a key if it holds a value, as one command (Valkey >= 9.0)",
        },
    ];
}

/// The server software, from `INFO server`'s `server_name` (Valkey says
/// `valkey`; Redis says nothing and reports `redis_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerName {
    /// Redis (no `server_name`, or `redis`).
    Redis,
    /// Valkey (`server_name:valkey`).
    Valkey,
    /// Another `server_name`.
    Other,
    /// `INFO` was refused, or named no version.
    #[default]
    Unknown,
}

impl ServerName {
    /// `redis`, `valkey`, `other` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Redis => "redis",
            Self::Valkey => "valkey",
            Self::Other => "other",
            Self::Unknown => "unknown",
        }
    }
}

/// A server version, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major version.
    pub major: u16,
    /// The minor version.
    pub minor: u16,
    /// The patch level.
    pub patch: u16,
}

impl Version {
    /// `8.2.3`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.trim().split('.').map(|p| p.parse::<u16>().ok());
        let v = Version {
            major: parts.next()??,
            minor: parts.next().unwrap_or(Some(0))?,
            patch: parts.next().unwrap_or(Some(0))?,
        };
        Some(v)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What one server (on a cluster: the nodes asked) can do. One flag per
/// [`Capability`]; `false` when the server did not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Caps {
    /// `server_name` of `INFO server` (`redis` when it names none).
    pub server: ServerName,
    /// `<server_name>_version` (`valkey_version`), else `redis_version`; on
    /// a cluster the lowest of the nodes'.
    pub version: Option<Version>,
    /// `HEXPIRE`, `HPEXPIRE`, `HPEXPIREAT`, `HPTTL`, `HPERSIST`.
    pub hash_field_ttl: bool,
    /// `HGETEX`, `HSETEX`.
    pub hash_getex: bool,
    /// `BITOP DIFF`, `DIFF1`, `ANDOR`, `ONE`.
    pub bitop_diff: bool,
    /// `DELIFEQ`.
    pub delifeq: bool,
    /// Whether `INFO server` answered.
    pub info_reported: bool,
    /// Whether `COMMAND INFO` answered (else every flag is `false`).
    pub commands_reported: bool,
}

impl Caps {
    /// The flag of the capability named `name` (`None`: no such capability).
    pub fn has(&self, name: &str) -> Option<bool> {
        Some(match name {
            "hash_field_ttl" => self.hash_field_ttl,
            "hash_getex" => self.hash_getex,
            "bitop_diff" => self.bitop_diff,
            "delifeq" => self.delifeq,
            _ => return None,
        })
    }

    /// These caps with the capability `name` turned off (e.g. to keep the
    /// path every server has on a cluster being upgraded node by node);
    /// unchanged for a name that is not one.
    pub fn without(mut self, name: &str) -> Self {
        match name {
            "hash_field_ttl" => self.hash_field_ttl = false,
            "hash_getex" => self.hash_getex = false,
            "bitop_diff" => self.bitop_diff = false,
            "delifeq" => self.delifeq = false,
            _ => {}
        }
        self
    }

    /// The names of the capabilities the server has.
    pub fn names(&self) -> Vec<&'static str> {
        Capability::ALL
            .iter()
            .filter(|c| self.has(c.name) == Some(true))
            .map(|c| c.name)
            .collect()
    }

    /// The caps of the replies to [`add`]'s commands.
    pub(crate) fn from_replies(info: Value, commands: Value, bitop_docs: Value) -> Self {
        let mut caps = Caps::default();
        let texts = info_texts(info);
        caps.info_reported = !texts.is_empty();
        let nodes: Vec<(ServerName, Option<Version>)> =
            texts.iter().map(|t| name_and_version(t)).collect();
        if let Some((name, _)) = nodes.first() {
            caps.server = *name;
        }
        caps.version = nodes.iter().filter_map(|(_, v)| *v).min();
        let Some(known) = known_commands(&commands) else {
            return caps;
        };
        caps.commands_reported = true;
        let ops = bitop_operators(&bitop_docs);
        let has = |c: &&str| match c.strip_prefix("BITOP ") {
            Some(op) => ops.iter().any(|o| o.eq_ignore_ascii_case(op)),
            None => known.iter().any(|k| k.eq_ignore_ascii_case(c)),
        };
        let all = |name: &str| {
            let cap = Capability::ALL.iter().find(|c| c.name == name);
            cap.is_some_and(|c| c.commands.iter().all(has))
        };
        caps.hash_field_ttl = all("hash_field_ttl");
        caps.hash_getex = all("hash_getex");
        caps.bitop_diff = all("bitop_diff");
        caps.delifeq = all("delifeq");
        caps
    }
}

/// The plain commands of every capability, for `COMMAND INFO`.
pub(crate) fn asked_commands() -> Vec<&'static str> {
    Capability::ALL
        .iter()
        .flat_map(|c| c.commands.iter().copied())
        .filter(|c| !c.starts_with("BITOP "))
        .collect()
}

/// The texts of an `INFO` reply: one server's, or (a cluster router that
/// asked every primary) each node's; none for an error reply. The
/// memory probe reads `INFO memory` with it too.
pub(super) fn info_texts(reply: Value) -> Vec<String> {
    match reply {
        Value::Map(nodes) => nodes.into_iter().filter_map(|(_, v)| text(v)).collect(),
        v => text(v).into_iter().collect(),
    }
}

fn text(v: Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Value::VerbatimString { text, .. } => Some(text),
        Value::SimpleString(s) => Some(s),
        _ => None,
    }
}

/// The server's name and version in one node's `INFO server` text.
fn name_and_version(info: &str) -> (ServerName, Option<Version>) {
    let field = |name: &str| {
        info.lines()
            .filter_map(|l| l.trim().split_once(':'))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.trim().to_string())
    };
    match field("server_name") {
        Some(name) => {
            let version = field(&format!("{name}_version")).and_then(|v| Version::parse(&v));
            let kind = match name.as_str() {
                "valkey" => ServerName::Valkey,
                "redis" => ServerName::Redis,
                _ => ServerName::Other,
            };
            (kind, version)
        }
        None => match field("redis_version").and_then(|v| Version::parse(&v)) {
            Some(v) => (ServerName::Redis, Some(v)),
            None => (ServerName::Unknown, None),
        },
    }
}

/// The names of the commands a `COMMAND INFO` reply knows (an unknown one
/// is a nil); `None` for an error reply.
fn known_commands(reply: &Value) -> Option<Vec<String>> {
    let Value::Array(entries) = reply else {
        return None;
    };
    Some(
        entries
            .iter()
            .filter_map(|e| match e {
                Value::Array(fields) => fields.first().and_then(string),
                _ => None,
            })
            .collect(),
    )
}

/// The operator tokens of `BITOP` in a `COMMAND DOCS BITOP` reply (RESP2:
/// arrays of name, value; RESP3: maps): every value of a `token` field.
/// Redis 7.0 documents the operator as a plain string: no token.
fn bitop_operators(reply: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_tokens(reply, &mut out);
    out
}

fn collect_tokens(v: &Value, out: &mut Vec<String>) {
    let is_token = |k: &Value| string(k).as_deref() == Some("token");
    match v {
        Value::Map(m) => {
            for (k, val) in m {
                match string(val) {
                    Some(t) if is_token(k) => out.push(t),
                    _ => collect_tokens(val, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let after_token = i % 2 == 1 && is_token(&items[i - 1]);
                match string(item) {
                    Some(t) if after_token => out.push(t),
                    _ => collect_tokens(item, out),
                }
            }
        }
        _ => {}
    }
}

fn string(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// The caps of the unit tests' replies.
#[cfg(test)]
fn caps_of(info: &str, commands: &[Option<&str>], docs: Value) -> Caps {
    let commands = Value::Array(
        commands
            .iter()
            .map(|c| match c {
                Some(name) => Value::Array(vec![
                    Value::BulkString(name.to_lowercase().into_bytes()),
                    Value::Int(-2),
                ]),
                None => Value::Nil,
            })
            .collect(),
    );
    Caps::from_replies(Value::BulkString(info.as_bytes().to_vec()), commands, docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    /// `COMMAND DOCS BITOP` (RESP2) with these operator tokens.
    fn docs(tokens: &[&str]) -> Value {
        let ops = tokens
            .iter()
            .map(|t| {
                Value::Array(vec![
                    bulk("name"),
                    bulk(&t.to_lowercase()),
                    bulk("type"),
                    bulk("pure-token"),
                    bulk("token"),
                    bulk(t),
                ])
            })
            .collect();
        Value::Array(vec![
            bulk("bitop"),
            Value::Array(vec![
                bulk("arguments"),
                Value::Array(vec![Value::Array(vec![
                    bulk("name"),
                    bulk("operation"),
                    bulk("type"),
                    bulk("oneof"),
                    bulk("arguments"),
                    Value::Array(ops),
                ])]),
            ]),
        ])
    }

    #[test]
    fn valkey_is_named_by_server_name_and_its_own_version() {
        let info =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n";
        let asked = asked_commands();
        let have: Vec<Option<&str>> = asked.iter().map(|c| Some(*c)).collect();
        let caps = caps_of(info, &have, docs(&["AND", "OR", "XOR", "NOT"]));
        assert_eq!(caps.server, ServerName::Valkey);
        assert_eq!(caps.version, Version::parse("9.1.2"));
        assert!(caps.hash_field_ttl && caps.hash_getex && caps.delifeq);
        assert!(!caps.bitop_diff);
        assert_eq!(caps.names(), ["hash_field_ttl", "hash_getex", "delifeq"]);
    }

    #[test]
    fn a_capability_needs_every_one_of_its_commands() {
        let info = "redis_version:8.2.3\r\n";
        let have: Vec<Option<&str>> = asked_commands()
            .iter()
            .map(|c| (*c != "HPERSIST" && *c != "DELIFEQ").then_some(*c))
            .collect();
        let ops = ["AND", "OR", "XOR", "NOT", "DIFF", "DIFF1", "ANDOR", "ONE"];
        let caps = caps_of(info, &have, docs(&ops));
        assert_eq!(caps.server, ServerName::Redis);
        assert_eq!(caps.version.unwrap().to_string(), "8.2.3");
        assert!(!caps.hash_field_ttl, "HPERSIST is missing");
        assert!(caps.hash_getex && caps.bitop_diff && !caps.delifeq);
        assert!(!caps.without("bitop_diff").bitop_diff);
        assert_eq!(caps.has("nope"), None);
    }

    #[test]
    fn refusals_leave_every_capability_off() {
        let denied = redis::parse_redis_value(b"-NOPERM this user has no permissions\r\n").unwrap();
        assert!(matches!(denied, Value::ServerError(_)));
        let caps = Caps::from_replies(denied.clone(), denied.clone(), denied);
        assert_eq!(caps, Caps::default());
        assert!(!caps.info_reported && !caps.commands_reported);
        assert_eq!(caps.server, ServerName::Unknown);
    }

    #[test]
    fn a_script_needs_only_capabilities_there_are_and_runs_where_they_are() {
        let mut needing = 0;
        for s in crate::scripts::ALL {
            for n in s.needs {
                assert!(Caps::default().has(n).is_some(), "{}: NEEDS {n}", s.name);
            }
            assert_eq!(
                s.runs_on(&Caps::default()),
                s.needs.is_empty(),
                "{}",
                s.name
            );
            let mut all = Caps::default();
            for n in s.needs {
                match *n {
                    "hash_field_ttl" => all.hash_field_ttl = true,
                    "hash_getex" => all.hash_getex = true,
                    "bitop_diff" => all.bitop_diff = true,
                    _ => all.delifeq = true,
                }
            }
            assert!(s.runs_on(&all), "{}", s.name);
            needing += usize::from(!s.needs.is_empty());
        }
        assert!(needing >= 1, "expiring_map.put_native needs per-field TTLs");
    }

    #[test]
    fn every_capability_is_a_field_and_versions_parse() {
        for c in Capability::ALL {
            assert_eq!(Caps::default().has(c.name), Some(false), "{}", c.name);
            let json = serde_json::to_value(Caps::default()).unwrap();
            assert!(json.get(c.name).is_some(), "{} is serialized", c.name);
        }
        assert_eq!(
            Version::parse("7.0"),
            Some(Version {
                major: 7,
                minor: 0,
                patch: 0
            })
        );
        assert_eq!(Version::parse("x"), None);
        assert!(Version::parse("7.0.15") < Version::parse("7.2.4"));
    }
}
