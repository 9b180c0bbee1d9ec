//! Where an expiring map keeps its expiries ([`Path`]), and the choice
//! between the two measured on the server ([`ExpiringMap::choose_path`]).

use redis::Value;
use serde::Serialize;

use super::{EXPIRY_BYTES, ExpiringMap};
use crate::core::{Batch, Op};

/// Where an expiring map keeps each entry's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Path {
    /// In the entry: the value's first 6 bytes (every server).
    Portable,
    /// The server's per-field TTL (needs `hash_field_ttl` and `hash_getex`).
    Native,
}

impl Path {
    /// `portable` or `native`.
    pub fn name(self) -> &'static str {
        match self {
            Path::Portable => "portable",
            Path::Native => "native",
        }
    }
}

/// What [`ExpiringMap::choose_path`] measured and chose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathChoice {
    /// The path chosen.
    pub path: Path,
    /// Why, in words.
    pub reason: String,
    /// `MEMORY USAGE` of the probe hash on the portable path (bytes), when
    /// measured.
    pub portable_bytes: Option<u64>,
    /// The same entries with a field TTL each, when measured.
    pub native_bytes: Option<u64>,
    /// `OBJECT ENCODING` of the probe hash with field TTLs (`listpackex`,
    /// `hashtable`), when measured.
    pub native_encoding: Option<String>,
}

/// Entries of the probe hash: 200, as the measurements in DEVELOPERS.md.
pub(crate) const PROBE_ENTRIES: usize = 200;

fn probe_pairs(expiry: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(2 * PROBE_ENTRIES);
    for i in 0..PROBE_ENTRIES {
        out.push(format!("user:{i:06}").into_bytes());
        let mut v = if expiry {
            vec![0, 0, 1, 0x9b, 0, 0]
        } else {
            Vec::with_capacity(8)
        };
        v.extend_from_slice(format!("v{i:07}").as_bytes());
        out.push(v);
    }
    debug_assert!(!expiry || out[1].len() == 8 + EXPIRY_BYTES);
    out
}

fn portable(reason: impl Into<String>) -> PathChoice {
    PathChoice {
        path: Path::Portable,
        reason: reason.into(),
        portable_bytes: None,
        native_bytes: None,
        native_encoding: None,
    }
}

impl ExpiringMap {
    /// Chooses the path for maps on this server: portable when the server
    /// has no per-field TTL (`hash_field_ttl` and `hash_getex` of
    /// [`Env::caps`](crate::core::Env::caps)); otherwise it writes a probe
    /// hash `<base>:probe` of 200 entries (19-byte payloads)
    /// both ways, reads `MEMORY USAGE` and `OBJECT ENCODING`, deletes it, and
    /// picks native only when its hash stays listpack-encoded and costs no
    /// more than the portable one. A server that refuses `MEMORY USAGE`
    /// gets the portable path, and the reason says so.
    pub fn choose_path(base: &str) -> Op<PathChoice> {
        let probe = format!("{base}:probe");
        Op::with_env(move |env| {
            let caps = env.caps();
            if !(caps.hash_field_ttl && caps.hash_getex) {
                return Op::ready(portable(
                    "the server has no per-field TTL (hash_field_ttl and hash_getex)",
                ));
            }
            let mut batch = Batch::with_capacity(9);
            let add = |batch: &mut Batch, name: &str, args: &[&[u8]]| {
                let mut cmd = redis::cmd(name);
                cmd.arg(&probe);
                for a in args {
                    cmd.arg(*a);
                }
                batch.add(&probe, cmd);
            };
            let usage: &[&[u8]] = &[b"SAMPLES", b"0"];
            for (expiry, native) in [(true, false), (false, true)] {
                add(&mut batch, "DEL", &[]);
                let pairs = probe_pairs(expiry);
                let args: Vec<&[u8]> = pairs.iter().map(|p| p.as_slice()).collect();
                add(&mut batch, "HSET", &args);
                if native {
                    let n = PROBE_ENTRIES.to_string();
                    let mut ttl: Vec<&[u8]> = vec![b"3600000", b"FIELDS", n.as_bytes()];
                    ttl.extend(args.iter().step_by(2));
                    add(&mut batch, "HPEXPIRE", &ttl);
                }
                let mut mem = redis::cmd("MEMORY");
                mem.arg("USAGE").arg(&probe).arg(usage);
                batch.add(&probe, mem);
            }
            let mut enc = redis::cmd("OBJECT");
            enc.arg("ENCODING").arg(&probe);
            batch.add(&probe, enc);
            add(&mut batch, "DEL", &[]);
            Op::send(batch, decide)
        })
    }
}

/// The choice from the probe's replies (see [`ExpiringMap::choose_path`]).
fn decide(replies: crate::core::Replies) -> crate::Result<PathChoice> {
    let values = replies.into_values();
    let int = |v: &Value| match v {
        Value::Int(n) => Some(*n as u64),
        _ => None,
    };
    // DEL HSET MEMORY, DEL HSET HPEXPIRE MEMORY, OBJECT, DEL
    let (Some(p), Some(n)) = (values.get(2).and_then(int), values.get(6).and_then(int)) else {
        return Ok(portable(
            "MEMORY USAGE was not answered (refused?): the portable path works everywhere",
        ));
    };
    let encoding = match values.get(7) {
        Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
        Some(Value::SimpleString(s)) => s.clone(),
        _ => String::new(),
    };
    let listpack = encoding.starts_with("listpack");
    let path = if listpack && n <= p {
        Path::Native
    } else {
        Path::Portable
    };
    let reason = format!(
        "{PROBE_ENTRIES} entries: portable {p} B, native {n} B ({encoding}){}",
        match path {
            Path::Native => ": native costs no more and stays listpack",
            Path::Portable if !listpack => ": native converts the hash out of listpack",
            Path::Portable => ": portable costs less",
        }
    );
    Ok(PathChoice {
        path,
        reason,
        portable_bytes: Some(p),
        native_bytes: Some(n),
        native_encoding: Some(encoding),
    })
}
