//! Expiring maps: a time to live and a max-idle time per entry on sharded
//! hashes that stay listpack-encoded (`lua/expiring_map/`).
//!
//! An [`ExpiringMap`] is sharded like a [`ShardedHash`](crate::sharded_hash::ShardedHash):
//! the logical map `base` lives in the hashes `base:<shard>`, shard
//! `crc32(field) % shards`, planned by the same planner so that the fullest
//! shard stays under `hash-max-listpack-entries`. Each entry has its own
//! expiry (`put(field, value, Some(ttl))`, or none), and an optional
//! **max-idle** time `idle` ([`ExpiringMapBuilder::max_idle`]): every read
//! of a live entry that expires leaves it at least `idle - idle/16`
//! (integer milliseconds) to live, so an entry read at least every
//! `idle · 15/16` never expires, and one left unread expires at most `idle`
//! after the last push (on time, if it was never pushed). On the portable
//! path a read that finds less than `idle - idle/16` left pushes the expiry
//! to `idle` from now, and one that finds more writes nothing (a read
//! within `idle/16` of the last push): it is the plain read below, and only
//! a shard with an entry due for a push is read again, by the script that
//! pushes it (`expiring_map.get`, a second round trip). On the native path
//! every read sets the expiry to `idle` from now unless it is later
//! (`HPEXPIRE ... GT`). **No read ever returns an expired entry.**
//!
//! Two paths ([`Path`]) keep the expiry:
//!
//! - [`Path::Portable`] (every server, Redis 7.0 and Valkey 8.1 included):
//!   the expiry is stored with the entry, as the first 6 bytes of its value
//!   (big-endian unix milliseconds, 0 for none), so a shard stays one small
//!   listpack hash (6 bytes more per entry). The scripts read the server's
//!   clock (`TIME`) and treat an expired entry as absent (a read writes
//!   nothing unless an entry is due for a max-idle push, so it needs no
//!   script: `HMGET`, then `TIME` on the same node, in one round trip);
//!   [`ExpiringMap::sweep`]
//!   removes expired entries shard by shard, and a write that would fill a
//!   shard removes that shard's expired entries first.
//! - [`Path::Native`] (servers with `hash_field_ttl` and `hash_getex`, see
//!   [`crate::core::caps`]): the server's per-field TTL (`HPEXPIRE`,
//!   `HPTTL`, `HPERSIST`, and `HSETEX` inside the write's script,
//!   `expiring_map.put_native`, which keeps the entry limit and the cap as
//!   the portable one does, counting live fields: one that expired but
//!   that the server has not removed yet still counts toward the listpack
//!   conversion until it does); the server removes expired fields itself.
//!   On Valkey 9.1 a field TTL converts the hash to a hash table. Its
//!   script declares `-- NEEDS hash_field_ttl hash_getex`
//!   ([`ScriptInfo::needs`](crate::ScriptInfo::needs)): it is called only on
//!   a server that has them.
//!
//! [`ExpiringMap::choose_path`] measures both on the server (a probe hash
//! `<base>:probe` of 200 entries, `MEMORY USAGE`, then deleted) and picks
//! the native path only where it stays listpack-encoded and costs no more
//! memory; [`PathChoice`] says what it measured and why. Data written on one
//! path is read on the same path: the path is part of the map's layout,
//! stored with the data. A map of [`ExpiringMap::planned`] (or built with
//! [`record_layout`](ExpiringMapBuilder::record_layout)) claims `<base>:meta`
//! (shards and path) before its first write; [`ExpiringMap::open`] and a
//! later `planned` on any server read it back, so every writer and reader
//! keeps the path the data was written on, and one that asks for another
//! layout is refused with [`ErrorKind::LayoutMismatch`] before it writes.
//!
//! An optional size **cap** per shard ([`ExpiringMapBuilder::cap`], on both
//! paths) keeps each shard at most that many entries: the write's own script
//! evicts the other entries nearest their expiry first.
//!
//! [`ExpiringMap::len`] counts fields with `HLEN`: **it includes entries that
//! have expired but are not removed yet** (on the portable path until a
//! sweep or a write to their shard removes them; on the native path until
//! the server's own expiry does). [`ExpiringMap::sweep`] returns the live
//! count of the shards it swept, and [`ExpiringMap::entries`] lists only
//! live entries.
//!
//! The generated Python, PHP and TypeScript clients (`redis-patterns export`)
//! have the class `ExpiringMap` on the portable path, with the same
//! operations (the conformance cases run each of them and the Rust API on
//! the same data); a map kept on the native path is read from Rust.
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::expiring_map::ExpiringMap;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let (sessions, plan) = ExpiringMap::planned("sessions", 100_000).run(&mut con)?;
//! println!("{} shards, {} path: {}", plan.plan.shards, plan.path.path.name(), plan.path.reason);
//! sessions.put("s:1", "alice", Some(Duration::from_secs(1800))).run(&mut con)?;
//! let who: Option<String> = sessions.get("s:1").run(&mut con)?;
//! assert_eq!(who.as_deref(), Some("alice"));
//! let swept = sessions.sweep(0, 64).run(&mut con)?;
//! println!("{} expired entries removed, next shard {:?}", swept.removed, swept.next);
//! # Ok(())
//! # }
//! ```

mod contract;
mod layout;
mod native;
mod ops;
mod path;
mod portable;
mod scan;

use std::time::Duration;

use serde::Serialize;

pub(crate) use self::contract::contract;
pub use self::path::{Path, PathChoice};
pub use self::scan::{EntriesPage, Entry, SweepReport};
use crate::core::Op;
use crate::error::{Error, ErrorKind, Result};
use crate::sharded_hash::{DEFAULT_OVERFLOW_TARGET, ListpackLimits, Plan, binomial_tail};

/// The bytes the portable path adds before each value: its expiry.
pub(crate) const EXPIRY_BYTES: usize = 6;

/// The longest time to live or max-idle time, in milliseconds (the scripts'
/// bound).
pub(crate) const MAX_TTL_MS: u64 = 999_999_999_999_999;

/// A logical map of entries that expire, stored as listpack-sized shards
/// `base:<shard>`. Cheap to clone; holds no connection.
#[derive(Debug, Clone)]
pub struct ExpiringMap {
    base: String,
    shards: u32,
    limits: ListpackLimits,
    path: Path,
    cap: u64,
    max_idle_ms: u64,
    /// With a recorded layout: whether it was claimed yet.
    claim: crate::layout::Claim,
}

/// Builds an [`ExpiringMap`]: setters never fail, [`build`](Self::build)
/// checks.
#[derive(Debug, Clone)]
pub struct ExpiringMapBuilder {
    base: String,
    shards: u32,
    limits: ListpackLimits,
    path: Path,
    cap: u64,
    max_idle: Option<Duration>,
    record_layout: bool,
}

/// What [`ExpiringMap::planned`] chose: the shard count and the path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MapPlan {
    /// The shard count, planned as for a sharded hash.
    pub plan: Plan,
    /// The path, and what was measured to choose it.
    pub path: PathChoice,
}

/// What [`ExpiringMap::put_many`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PutReport {
    /// Fields that had no live entry before (for set-if-absent: inserted);
    /// `None` when not known (a shard's write was sent again after its
    /// reply was lost and found some of its fields).
    pub new: Option<u64>,
    /// Live entries the cap evicted.
    pub evicted: u64,
}

/// The time to live of one entry ([`ExpiringMap::ttl_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Ttl {
    /// No live entry.
    Missing,
    /// A live entry without expiry.
    Persistent,
    /// A live entry that expires after this long.
    Expires(Duration),
}

/// A duration as whole milliseconds from 1 to [`MAX_TTL_MS`], named `name`
/// in the refusal.
pub(crate) fn millis(name: &str, d: Duration) -> Result<i64> {
    let ms = d.as_millis();
    if ms == 0 || ms > MAX_TTL_MS as u128 {
        return Err(Error::invalid(
            name,
            format!("must be from 1 ms to {MAX_TTL_MS} ms"),
        ));
    }
    Ok(ms as i64)
}

/// A time to live as the scripts take it: 0 for none.
pub(crate) fn ttl_ms(ttl: Option<Duration>) -> Result<i64> {
    ttl.map_or(Ok(0), |d| millis("ttl", d))
}

impl ExpiringMapBuilder {
    crate::core::setters! {
        /// The listpack limits writes keep to (default
        /// [`ListpackLimits::DEFAULT`]).
        limits(limits: ListpackLimits) => limits;

        /// Where expiries live (default [`Path::Portable`]; see
        /// [`ExpiringMap::choose_path`]).
        path(path: Path) => path;

        /// At most this many entries per shard (default 0, no cap): a write
        /// evicts the other entries nearest their expiry first.
        cap(cap: u64) => cap;

        /// The max-idle time `idle` (default: none): every read of a live
        /// entry that expires leaves it at least `idle - idle/16` to live,
        /// pushing its expiry to `idle` from now (on the portable path only
        /// when it had less left); an entry read at least every
        /// `idle · 15/16` stays (see the [module](self)).
        max_idle(max_idle: Option<Duration>) => max_idle;

        /// Record the layout (shards and path) with the data (default: no):
        /// the first write stores it in `<base>:meta` unless one is stored
        /// ([`ExpiringMap::claim_layout`]), or is refused with
        /// [`ErrorKind::LayoutMismatch`] when another layout is stored there.
        record_layout(record: bool) => record_layout;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<ExpiringMap> {
        if self.base.is_empty() {
            return Err(Error::invalid("base", "must not be empty"));
        }
        if self.shards == 0 {
            return Err(Error::invalid("shard count", "must be at least 1"));
        }
        if self.limits.value as usize <= EXPIRY_BYTES && self.path == Path::Portable {
            return Err(Error::invalid(
                "limits",
                format!(
                    "a value limit of {} leaves no room for the expiry",
                    self.limits.value
                ),
            ));
        }
        let max_idle_ms = match self.max_idle {
            Some(d) => millis("max_idle", d)? as u64,
            None => 0,
        };
        Ok(ExpiringMap {
            base: self.base,
            shards: self.shards,
            limits: self.limits,
            path: self.path,
            cap: self.cap,
            max_idle_ms,
            claim: crate::layout::Claim::new(self.record_layout),
        })
    }
}

impl ExpiringMap {
    /// A builder for the map `base` of `shards` shards: portable, no cap,
    /// no max-idle, the default limits.
    pub fn builder(base: &str, shards: u32) -> ExpiringMapBuilder {
        ExpiringMapBuilder {
            base: base.to_string(),
            shards,
            limits: ListpackLimits::DEFAULT,
            path: Path::Portable,
            cap: 0,
            max_idle: None,
            record_layout: false,
        }
    }

    /// The portable map `base` of `shards` shards (see [`ExpiringMap::builder`]).
    pub fn new(base: &str, shards: u32) -> Result<Self> {
        Self::builder(base, shards).build()
    }

    /// Reads the server's listpack limits, plans the shard count for
    /// `expected` entries as for a sharded hash, and chooses the path
    /// ([`ExpiringMap::choose_path`]); the map records its layout (shards
    /// and path) with the data. When a layout is stored with the data
    /// already (in `<base>:meta`, by a writer on this or another server),
    /// the map takes its shards and path instead, and the plan and the
    /// choice say so.
    pub fn planned(base: &str, expected: u64) -> Op<(Self, MapPlan)> {
        if base.is_empty() {
            return Op::fail(Error::invalid("base", "must not be empty"));
        }
        let base = base.to_string();
        ListpackLimits::read().and_then(move |(limits, source)| {
            let mut p = match Plan::new(expected, limits, DEFAULT_OVERFLOW_TARGET) {
                Ok(p) => p,
                Err(e) => return Op::fail(e),
            };
            p.limits_source = source;
            Self::stored_layout(&base).and_then(move |stored| match stored {
                Some((shards, path)) => Op::from_result(stored_plan(&base, p, shards, path)),
                None => Self::choose_path(&base).try_map(move |choice| {
                    let map = Self::builder(&base, p.shards)
                        .limits(limits)
                        .path(choice.path)
                        .record_layout(true)
                        .build()?;
                    Ok((
                        map,
                        MapPlan {
                            plan: p,
                            path: choice,
                        },
                    ))
                }),
            })
        })
    }

    /// The logical map's name: shard keys are `<base>:<shard>`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The number of shard keys.
    pub fn shards(&self) -> u64 {
        self.shards as u64
    }

    /// Where expiries live.
    pub fn path(&self) -> Path {
        self.path
    }

    /// The per-shard cap (0: none).
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// The max-idle time, if any.
    pub fn max_idle(&self) -> Option<Duration> {
        (self.max_idle_ms > 0).then(|| Duration::from_millis(self.max_idle_ms))
    }

    /// The key of shard `shard`: `<base>:<shard>`.
    pub fn key_of_shard(&self, shard: u64) -> String {
        format!("{}:{shard}", self.base)
    }

    /// The shard a field lives in: `crc32(field) % shards`.
    pub fn shard_of(&self, field: &[u8]) -> u64 {
        crc32fast::hash(field) as u64 % self.shards as u64
    }

    /// The key of the shard a field lives in.
    pub fn shard_key(&self, field: &[u8]) -> String {
        self.key_of_shard(self.shard_of(field))
    }

    /// Checks a field/value pair against the value limit: on the portable
    /// path the stored value is the value and its 6-byte expiry (refused as
    /// `value with its expiry`), on the native path the value itself
    /// (`value`).
    pub fn check_pair(&self, field: &[u8], value: &[u8]) -> Result<()> {
        let (extra, what) = match self.path {
            Path::Portable => (EXPIRY_BYTES, "value with its expiry"),
            Path::Native => (0, "value"),
        };
        let limit = self.limits.value as usize;
        if field.len() > limit {
            return Err(ErrorKind::ListpackValueTooLong {
                what: "field",
                len: field.len(),
                limit,
            }
            .into());
        }
        if value.len() + extra > limit {
            return Err(ErrorKind::ListpackValueTooLong {
                what,
                len: value.len() + extra,
                limit,
            }
            .into());
        }
        Ok(())
    }

    /// The entry limit the writes keep to.
    fn max_entries(&self) -> i64 {
        self.limits.entries.min(MAX_TTL_MS) as i64
    }
}

/// The map and plan of [`ExpiringMap::planned`] for a layout stored with
/// the data: its shard count (the plan's mean and overflow bound for it)
/// and its path.
fn stored_plan(base: &str, mut p: Plan, shards: u32, path: Path) -> Result<(ExpiringMap, MapPlan)> {
    let map = ExpiringMap::builder(base, shards)
        .limits(p.limits)
        .path(path)
        .record_layout(true)
        .build()?;
    let n = p.expected.max(1);
    p.shards = shards;
    p.mean_per_shard = p.expected as f64 / shards as f64;
    p.overflow_bound =
        (shards as f64 * binomial_tail(n, 1.0 / shards as f64, p.limits.entries)).min(1.0);
    let reason = format!(
        "stored with the data in {} ({})",
        map.meta_key(),
        map.layout()
    );
    let path = PathChoice {
        path,
        reason,
        portable_bytes: None,
        native_bytes: None,
        native_encoding: None,
    };
    Ok((map, MapPlan { plan: p, path }))
}
