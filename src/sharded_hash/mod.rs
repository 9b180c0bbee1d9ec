//! Sharded hashes that stay listpack-encoded (`lua/sharded_hash/`).
//!
//! One Redis key per entry costs ~90 bytes for a 19-byte payload, one big
//! HASH ~75 bytes; the same data spread over small hashes that each stay in
//! the compact `listpack` encoding costs ~25 bytes. The saving only holds
//! while *every* shard stays under the server's `hash-max-listpack-entries`
//! and `hash-max-listpack-value`: a shard one field over the limit converts to
//! a real hash table and costs three times as much. This module gets that
//! right by construction:
//!
//! - [`Plan::new`] picks the shard count from the expected number of entries and
//!   the server's live limits ([`ListpackLimits::from_server`]) so that the
//!   *fullest* shard stays under the entry limit with overwhelming
//!   probability (exact binomial tail with a union bound over the shards,
//!   default target 1e-9), not just the average one.
//! - a strict [`ShardedHash`] (the default) refuses fields and values longer
//!   than the value limit before sending anything
//!   ([`ErrorKind::ListpackValueTooLong`]), and its writes run as one script
//!   per shard that refuses to grow a shard past the entry limit
//!   ([`ErrorKind::ShardFull`]), so no write ever converts a shard.
//! - [`ShardedHash::inspect`] samples shards' `OBJECT ENCODING` and reports
//!   how many have converted anyway (written by other clients, limits
//!   lowered).
//!
//! Keys: the logical hash `base` is stored as `base:<shard>` with the shard
//! id `crc32(field) % shards` of the PHP recipe ([`ShardedHash::new`]), or
//! `id / fields_per_shard` for dense integer ids ([`ShardedHash::by_id`],
//! which fills shards evenly and exactly). The separator is `:` unless the
//! builder names another ([`ShardedHashBuilder::separator`]): the PHP
//! recipe's `shardKey` joins `base_<shard>`, so
//! `ShardedHash::builder("users", Sharding::Crc32 { shards }).separator("_")`
//! reads and writes the shards PHP code wrote. Shard keys carry **no** common
//! hash tag, so on Redis Cluster they spread over the nodes; every script
//! touches exactly one shard key, hence one slot. Calls that touch several
//! shards (multi-get, length, multi-set, inspect, each batch of an import)
//! are one [`Batch`]: the connection sends it as one pipeline
//! on one server and as one pipeline per node on a cluster — one round trip
//! either way, not one per shard.
//!
//! The planners say what they assumed: [`ShardedHash::planned`] returns a
//! [`Plan`] whose `limits_source` is `LimitsSource::Server`, or
//! `DefaultBecauseDenied` (512 entries, 64 bytes) when `CONFIG GET` was
//! refused.
//!
//! Built with [`record_layout(true)`](ShardedHashBuilder::record_layout)
//! (as the command line does), a hash claims its layout in `<base>:meta`
//! before its first write ([`crate::layout`]), and a writer with another
//! one is refused ([`ErrorKind::LayoutMismatch`]); [`ShardedHash::open`]
//! reads it back (`ErrorKind::LayoutMissing` for data written without
//! one).
//!
//! [`ShardedHash::incr_once`] adds once per request: it keeps its result
//! under a request key in the shard's slot (`{<shard key>}:req:<id>`, one
//! hour by default), so a resend — by the connection, or by the caller
//! after a crash — answers the first result without adding again.
//!
//! [`ShardedHash::import`] streams `(field, value)` items from any iterator
//! into the hash with set-if-absent (the PHP bulk-load recipe, a pipelined
//! `hsetNx` of every line, without loading the input whole): bounded
//! batches, counts of inserted / already present / rejected items.
//!
//! Every operation is an [`Op`]: run it with `.run(&mut con)` on a
//! [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use redis_patterns::prelude::*;
//! use redis_patterns::sharded_hash::{ImportOptions, ShardedHash};
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! // The shard count for a million entries, planned from the server's limits.
//! let (users, plan) = ShardedHash::planned("users", 1_000_000).run(&mut con)?;
//! println!("{} shards, {:.0} entries per shard on average", plan.shards, plan.mean_per_shard);
//! users.set("alice", "1").run(&mut con)?;
//! let got: Vec<Option<String>> = users.get_many(&["alice", "bob"]).run(&mut con)?;
//! assert_eq!(got[0].as_deref(), Some("1"));
//! let health = users.inspect(100).run(&mut con)?;
//! assert_eq!(health.converted, 0);
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let users = ShardedHash::new("users", 2_048)?;
//! let items = (0..10_000).map(|i| (format!("user:{i:06}"), format!("v{i}")));
//! let report = users.import(items, ImportOptions::default()).run_async(&con).await?;
//! println!("{} inserted, {} already present", report.inserted, report.present);
//! let n = users.len().run_async(&con).await?;
//! # Ok(())
//! # }
//! ```

mod contract;
mod import;
mod layout;
mod limits;
mod plan;

use std::collections::BTreeMap;

use redis::FromRedisValue;
use serde::Serialize;

pub(crate) use self::contract::{contract, listpack_params, shard_key};
pub use self::import::{ImportOptions, ImportReport, RejectReason, Rejection};
pub use self::limits::ListpackLimits;
pub(crate) use self::plan::DEFAULT_OVERFLOW_TARGET;
pub use self::plan::Plan;
pub(crate) use self::plan::binomial_tail;
use crate::core::request_id::request_args;
use crate::core::resend::{changed, changed_count};
use crate::core::{Batch, Op, RequestId, setters};
use crate::error::{Error, ErrorKind, Result};
use crate::scripts;

/// How fields map to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Sharding {
    /// `crc32(field) % shards` (the PHP recipe's `shardKey`).
    Crc32 {
        /// How many shards.
        shards: u32,
    },
    /// `id / fields_per_shard` for fields that are decimal integer ids
    /// `0..=max_id`.
    ById {
        /// Consecutive ids per shard.
        fields_per_shard: u64,
        /// The largest id.
        max_id: u64,
    },
}

/// A logical hash stored as listpack-sized shards `base:<shard>` (or another
/// separator: [`ShardedHashBuilder::separator`]). Cheap to
/// clone; holds no connection.
#[derive(Debug, Clone)]
pub struct ShardedHash {
    base: String,
    separator: String,
    sharding: Sharding,
    limits: ListpackLimits,
    strict: bool,
    /// With a recorded layout: whether it was claimed yet.
    claim: crate::layout::Claim,
}

/// Builds a [`ShardedHash`]: setters never fail, [`build`](Self::build)
/// checks.
#[derive(Debug, Clone)]
pub struct ShardedHashBuilder {
    base: String,
    separator: String,
    sharding: Sharding,
    limits: ListpackLimits,
    strict: bool,
    record_layout: bool,
}

/// The separator between the base and the shard id unless the builder
/// names another.
pub(crate) const DEFAULT_SEPARATOR: &str = ":";

/// What [`ShardedHash::inspect`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Shards looked at.
    pub sampled: u64,
    /// Of those, shards that do not exist (empty).
    pub missing: u64,
    /// Shards still `listpack`-encoded.
    pub listpack: u64,
    /// Shards converted to `hashtable`.
    pub converted: u64,
    /// Keys of the converted shards (at most 100).
    pub converted_keys: Vec<String>,
    /// The most fields any sampled shard holds.
    pub max_len: u64,
    /// Fields in the sampled shards.
    pub sampled_len: u64,
}

fn check_base(base: &str) -> Result<()> {
    if base.is_empty() {
        return Err(Error::invalid("base", "must not be empty"));
    }
    Ok(())
}

impl ShardedHashBuilder {
    setters! {
        /// The limits that strict writes enforce (default
        /// [`ListpackLimits::DEFAULT`]; read the server's with
        /// [`ListpackLimits::from_server`]).
        limits(limits: ListpackLimits) => limits;

        /// Strict (the default): fields or values over the value limit are
        /// refused before anything is sent, and writes refuse to push a shard
        /// past the entry limit. Not strict: writes are plain `HSET`/`HSETNX`
        /// and such writes convert their shard (see [`ShardedHash::inspect`]).
        strict(strict: bool) => strict;

        /// What joins the base and the shard id in a shard key (default
        /// `":"`, `base:<shard>`): `"_"` gives the PHP recipe's
        /// `base_<shard>`. Not empty, no `{` or `}` (shard keys carry no hash
        /// tag, so that they spread over a cluster's nodes).
        separator(separator: &str) => separator = separator.to_string();

        /// Record the layout with the data (default: no): the first write
        /// stores it in the meta key `<base>:meta` (see
        /// [`ShardedHash::claim_layout`]), or is refused with
        /// [`ErrorKind::LayoutMismatch`] when another layout is stored there.
        record_layout(record: bool) => record_layout;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<ShardedHash> {
        check_base(&self.base)?;
        if self.separator.is_empty() {
            return Err(Error::invalid("separator", "must not be empty"));
        }
        if self.separator.contains(['{', '}']) {
            return Err(Error::invalid(
                "separator",
                "must not contain '{' or '}' (shard keys carry no hash tag)",
            ));
        }
        match self.sharding {
            Sharding::Crc32 { shards: 0 } => {
                return Err(Error::invalid("shard count", "must be at least 1"));
            }
            Sharding::ById {
                fields_per_shard: 0,
                ..
            } => return Err(Error::invalid("fields per shard", "must be at least 1")),
            _ => {}
        }
        Ok(ShardedHash {
            base: self.base,
            separator: self.separator,
            sharding: self.sharding,
            limits: self.limits,
            strict: self.strict,
            claim: crate::layout::Claim::new(self.record_layout),
        })
    }
}

/// Positions `0..` grouped by the shard at each one, shards in order and
/// positions in order within a shard (also the expiring map's).
pub(crate) fn group_by_shard(shards: impl IntoIterator<Item = u64>) -> BTreeMap<u64, Vec<usize>> {
    let mut by_shard: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, shard) in shards.into_iter().enumerate() {
        by_shard.entry(shard).or_default().push(i);
    }
    by_shard
}

/// Puts one shard's reply `values`, read for the positions `idx` of a
/// read of many fields, at those positions of `out` (also the expiring
/// map's); a reply of another length is short.
pub(crate) fn place_shard_values<V>(
    out: &mut [Option<V>],
    idx: &[usize],
    values: Vec<Option<V>>,
) -> Result<()> {
    if values.len() != idx.len() {
        return Err(Error::short_reply());
    }
    for (&i, v) in idx.iter().zip(values) {
        out[i] = v;
    }
    Ok(())
}

impl ShardedHash {
    /// A builder for the hash `base` sharded as `sharding`: strict, with the
    /// default limits.
    pub fn builder(base: &str, sharding: Sharding) -> ShardedHashBuilder {
        ShardedHashBuilder {
            base: base.to_string(),
            separator: DEFAULT_SEPARATOR.to_string(),
            sharding,
            limits: ListpackLimits::DEFAULT,
            strict: true,
            record_layout: false,
        }
    }

    /// A hash sharded by `crc32(field) % shards` over keys `base:0 ..
    /// base:<shards-1>`, strict, with the default limits (see
    /// [`ShardedHash::builder`], [`ShardedHash::planned`]).
    pub fn new(base: &str, shards: u32) -> Result<Self> {
        Self::builder(base, Sharding::Crc32 { shards }).build()
    }

    /// A hash of integer ids `0..=max_id` (fields are their decimal form),
    /// sharded by `id / fields_per_shard`: dense ids fill every shard
    /// exactly. Keep `fields_per_shard` at or below the entry limit.
    pub fn by_id(base: &str, fields_per_shard: u64, max_id: u64) -> Result<Self> {
        Self::builder(
            base,
            Sharding::ById {
                fields_per_shard,
                max_id,
            },
        )
        .build()
    }

    /// The strict hash a [`Plan`] describes (its shard count and limits).
    pub fn from_plan(base: &str, plan: &Plan) -> Result<Self> {
        Self::builder(base, plan.sharding())
            .limits(plan.limits)
            .build()
    }

    /// Reads the server's limits, plans for `expected` entries
    /// ([`Plan::DEFAULT_OVERFLOW_TARGET`]) and returns the hash with its plan. When
    /// the server refuses `CONFIG GET` (a least-privilege user), the plan is
    /// made against [`ListpackLimits::DEFAULT`] and its `limits_source` says
    /// so ([`LimitsSource::DefaultBecauseDenied`](crate::core::LimitsSource)).
    pub fn planned(base: &str, expected: u64) -> Op<(Self, Plan)> {
        if let Err(e) = check_base(base) {
            return Op::fail(e);
        }
        let base = base.to_string();
        ListpackLimits::read().try_map(move |(limits, source)| {
            let mut plan = Plan::new(expected, limits, DEFAULT_OVERFLOW_TARGET)?;
            plan.limits_source = source;
            Ok((Self::from_plan(&base, &plan)?, plan))
        })
    }

    /// The logical hash's name: shard keys are `<base><separator><shard>`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// What joins the base and the shard id (`:` unless the builder named
    /// another).
    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// How fields map to shards.
    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// The limits strict writes enforce.
    pub fn limits(&self) -> ListpackLimits {
        self.limits
    }

    /// Whether it refuses what would convert a shard out of listpack.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The number of shard keys.
    pub fn shards(&self) -> u64 {
        match self.sharding {
            Sharding::Crc32 { shards } => shards as u64,
            Sharding::ById {
                fields_per_shard,
                max_id,
            } => max_id / fields_per_shard + 1,
        }
    }

    /// The key of shard `shard`: `<base><separator><shard>` (`base:<shard>`
    /// by default).
    pub fn key_of_shard(&self, shard: u64) -> String {
        format!("{}{}{shard}", self.base, self.separator)
    }

    /// Every shard key, in shard order.
    pub fn shard_keys(&self) -> impl Iterator<Item = String> + '_ {
        (0..self.shards()).map(|s| self.key_of_shard(s))
    }

    /// The shard a field lives in.
    pub fn shard_of(&self, field: &[u8]) -> Result<u64> {
        match self.sharding {
            Sharding::Crc32 { shards } => Ok(crc32fast::hash(field) as u64 % shards as u64),
            Sharding::ById {
                fields_per_shard,
                max_id,
            } => {
                let id = std::str::from_utf8(field)
                    .ok()
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .filter(|s| s.len() == 1 || !s.starts_with('0'))
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| {
                        Error::invalid(
                            "field",
                            format!(
                                "`{}` is not a decimal integer id",
                                String::from_utf8_lossy(field)
                            ),
                        )
                    })?;
                if id > max_id {
                    return Err(ErrorKind::IdOutOfRange { id, max: max_id }.into());
                }
                Ok(id / fields_per_shard)
            }
        }
    }

    /// The key of the shard a field lives in.
    pub fn shard_key(&self, field: &[u8]) -> Result<String> {
        Ok(self.key_of_shard(self.shard_of(field)?))
    }

    /// Checks a field/value pair against the value limit (strict only).
    pub fn check_pair(&self, field: &[u8], value: &[u8]) -> Result<()> {
        if !self.strict {
            return Ok(());
        }
        for (what, len) in [("field", field.len()), ("value", value.len())] {
            if len as u64 > self.limits.value {
                return Err(ErrorKind::ListpackValueTooLong {
                    what,
                    len,
                    limit: self.limits.value as usize,
                }
                .into());
            }
        }
        Ok(())
    }

    /// The entry limit strict writes pass to their script (only strict
    /// writes run one).
    fn max_entries(&self) -> i64 {
        self.limits.entries.min(i64::MAX as u64) as i64
    }

    /// One plain command `<name> <shard key> <field>` on the field's shard.
    fn field_cmd<T: FromRedisValue + Send + 'static>(&self, name: &str, field: &[u8]) -> Op<T> {
        match self.shard_key(field) {
            Ok(key) => {
                let mut cmd = redis::cmd(name);
                cmd.arg(&key).arg(field);
                Op::cmd(key, cmd)
            }
            Err(e) => Op::fail(e),
        }
    }

    /// The commands of a multi-write of `pairs`, whose shards are `shards`
    /// (same order): strict, one `put` per shard touched; otherwise one
    /// `HSET` per shard touched, or one `HSETNX` per pair for set-if-absent.
    /// Every command answers how many of its pairs' fields were new (for
    /// set-if-absent: inserted). Returns the batch and the positions (in
    /// `pairs`) each of its commands covers.
    fn writes(
        &self,
        pairs: &[(&[u8], &[u8])],
        shards: &[u64],
        only_absent: bool,
    ) -> (Batch, Vec<Vec<usize>>) {
        let by_shard = group_by_shard(shards.iter().copied());
        let mut batch = Batch::with_capacity(by_shard.len());
        let mut covers = Vec::with_capacity(by_shard.len());
        for (shard, idx) in by_shard {
            let key = self.key_of_shard(shard);
            if self.strict {
                let items: Vec<&[u8]> =
                    idx.iter().flat_map(|&i| [pairs[i].0, pairs[i].1]).collect();
                batch.script(scripts::sharded_hash::put(
                    &key,
                    only_absent,
                    self.max_entries(),
                    &items,
                ));
                covers.push(idx);
            } else if only_absent {
                for i in idx {
                    let mut cmd = redis::cmd("HSETNX");
                    cmd.arg(&key).arg(pairs[i].0).arg(pairs[i].1);
                    batch.add(&key, cmd);
                    covers.push(vec![i]);
                }
            } else {
                let mut cmd = redis::cmd("HSET");
                cmd.arg(&key);
                for &i in &idx {
                    cmd.arg(pairs[i].0).arg(pairs[i].1);
                }
                batch.add(&key, cmd);
                covers.push(idx);
            }
        }
        (batch, covers)
    }

    /// Validates every pair (nothing is sent when one fails) and writes
    /// them in one batch; returns how many fields were new (`None`: not
    /// known, see [`ShardedHash::set_many`]).
    fn write(&self, pairs: &[(&[u8], &[u8])], only_absent: bool) -> Op<Option<u64>> {
        let shards = pairs
            .iter()
            .map(|&(f, v)| {
                let shard = self.shard_of(f)?;
                self.check_pair(f, v)?;
                Ok(shard)
            })
            .collect::<Result<Vec<u64>>>();
        let shards = match shards {
            Ok(s) => s,
            Err(e) => return Op::fail(e),
        };
        let (batch, covers) = self.writes(pairs, &shards, only_absent);
        // The most fields each command can find new: its distinct fields.
        let most: Vec<u64> = covers
            .iter()
            .map(|idx| {
                let fields: std::collections::HashSet<&[u8]> =
                    idx.iter().map(|&i| pairs[i].0).collect();
                fields.len() as u64
            })
            .collect();
        self.claimed(Op::send(batch, move |replies| {
            let resent = replies.resent_each();
            Ok(replies
                .all::<i64>()?
                .into_iter()
                .zip(most.iter().zip(resent))
                .map(|(n, (&max, resent))| changed_count(n.max(0) as u64, max, resent))
                .sum::<Option<u64>>())
        }))
    }

    fn write_pairs<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(F, V)],
        only_absent: bool,
    ) -> Op<Option<u64>> {
        let pairs: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(f, v)| (f.as_ref(), v.as_ref()))
            .collect();
        self.write(&pairs, only_absent)
    }

    /// Sets a field; returns whether it was new: `Some(true)` or
    /// `Some(false)`, `None` when that is not known — the write was sent
    /// again after its reply was lost (a broken connection, a failover) and
    /// found the field there, written by the first attempt or before it.
    pub fn set(&self, field: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Op<Option<bool>> {
        self.write(&[(field.as_ref(), value.as_ref())], false)
            .map(|n| n.map(|n| n == 1))
    }

    /// Sets a field only if it is absent (`HSETNX`); returns whether it was
    /// set (`None`: not known, as for [`ShardedHash::set`]; the field holds
    /// this call's value or an earlier one either way).
    pub fn set_if_absent(
        &self,
        field: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Op<Option<bool>> {
        self.write(&[(field.as_ref(), value.as_ref())], true)
            .map(|n| n.map(|n| n == 1))
    }

    /// Sets many fields: one write per shard touched, all in one batch; each
    /// shard's part is atomic. Returns how many fields were new (`None`
    /// when that is not known: a shard's write was sent again after its
    /// reply was lost and found some of its fields there). Every pair
    /// is validated before anything is sent. Strict: a shard that would
    /// pass the entry limit refuses its whole part
    /// ([`ErrorKind::ShardFull`], the first such error in shard order is
    /// returned) while the other shards' parts are written.
    pub fn set_many<F: AsRef<[u8]>, V: AsRef<[u8]>>(&self, pairs: &[(F, V)]) -> Op<Option<u64>> {
        self.write_pairs(pairs, false)
    }

    /// Like [`ShardedHash::set_many`] but keeps fields that exist (of a field
    /// given twice the first value wins). Returns how many were inserted
    /// (`None`: not known, as for [`ShardedHash::set_many`]).
    pub fn set_if_absent_many<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(F, V)],
    ) -> Op<Option<u64>> {
        self.write_pairs(pairs, true)
    }

    /// The value of a field, `None` when absent.
    pub fn get<V: FromRedisValue + Send + 'static>(
        &self,
        field: impl AsRef<[u8]>,
    ) -> Op<Option<V>> {
        self.field_cmd("HGET", field.as_ref())
    }

    /// The values of many fields, in the order asked (`None` for absent
    /// ones): one `HMGET` per shard touched, all in one batch.
    pub fn get_many<V, F>(&self, fields: &[F]) -> Op<Vec<Option<V>>>
    where
        V: FromRedisValue + Send + 'static,
        F: AsRef<[u8]>,
    {
        let shards = fields
            .iter()
            .map(|f| self.shard_of(f.as_ref()))
            .collect::<Result<Vec<u64>>>();
        let by_shard = match shards {
            Ok(s) => group_by_shard(s),
            Err(e) => return Op::fail(e),
        };
        let mut batch = Batch::with_capacity(by_shard.len());
        for (shard, idx) in &by_shard {
            let key = self.key_of_shard(*shard);
            let mut cmd = redis::cmd("HMGET");
            cmd.arg(&key);
            for &i in idx {
                cmd.arg(fields[i].as_ref());
            }
            batch.add(&key, cmd);
        }
        let n = fields.len();
        Op::send(batch, move |replies| {
            let mut out: Vec<Option<V>> = (0..n).map(|_| None).collect();
            for ((_, idx), values) in by_shard.iter().zip(replies.all::<Vec<Option<V>>>()?) {
                place_shard_values(&mut out, idx, values)?;
            }
            Ok(out)
        })
    }

    /// Deletes a field; returns whether it existed (`None` when that is not
    /// known: the `HDEL` was sent again after its reply was lost and found
    /// no field — the first attempt may have deleted it).
    pub fn delete(&self, field: impl AsRef<[u8]>) -> Op<Option<bool>> {
        match self.shard_key(field.as_ref()) {
            Ok(key) => {
                let mut cmd = redis::cmd("HDEL");
                cmd.arg(&key).arg(field.as_ref());
                Op::<i64>::cmd_resent(key, cmd).map(|(n, resent)| changed(n == 1, resent))
            }
            Err(e) => Op::fail(e),
        }
    }

    /// Whether a field exists.
    pub fn exists(&self, field: impl AsRef<[u8]>) -> Op<bool> {
        self.field_cmd::<i64>("HEXISTS", field.as_ref())
            .map(|n| n == 1)
    }

    /// Adds `delta` to an integer field (missing counts as 0) and returns the
    /// new value. Strict: a new field is refused ([`ErrorKind::ShardFull`])
    /// when its shard is already at the entry limit.
    ///
    /// Not idempotent: when the connection is lost after the request was
    /// written, the call fails with
    /// [`ErrorKind::OutcomeUnknown`] instead of being sent again (it may have
    /// added `delta` already). [`ShardedHash::incr_once`] can be resent.
    pub fn incr(&self, field: impl AsRef<[u8]>, delta: i64) -> Op<i64> {
        let field = field.as_ref();
        let key = match self.incr_key(field) {
            Ok(key) => key,
            Err(e) => return Op::fail(e),
        };
        self.claimed(if self.strict {
            self.incr_script(&key, field, delta, None)
        } else {
            let mut cmd = redis::cmd("HINCRBY");
            cmd.arg(&key).arg(field).arg(delta);
            Op::cmd(key, cmd)
        })
    }

    /// [`ShardedHash::incr`] at most once per `request`: the script keeps
    /// the result under the request's key (in the shard's slot) for the
    /// request's time to live, and a call with the same request returns it
    /// without adding again. So the connection resends it after a lost
    /// connection, and a caller may retry it (same request) after any error.
    /// A request names one call: another field or delta with the same
    /// request also gets the first call's result.
    pub fn incr_once(&self, field: impl AsRef<[u8]>, delta: i64, request: &RequestId) -> Op<i64> {
        let field = field.as_ref();
        match self.incr_key(field) {
            Ok(key) => self.claimed(self.incr_script(&key, field, delta, Some(request))),
            Err(e) => Op::fail(e),
        }
    }

    /// The shard key of an increment's field (the value is at most 20
    /// characters, "-9223372036854775808", so only the field is checked).
    fn incr_key(&self, field: &[u8]) -> Result<String> {
        let key = self.shard_key(field)?;
        self.check_pair(field, b"")?;
        Ok(key)
    }

    /// `sharded_hash.incr` (no entry limit when not strict).
    fn incr_script(
        &self,
        key: &str,
        field: &[u8],
        delta: i64,
        request: Option<&RequestId>,
    ) -> Op<i64> {
        let (request_key, request_ttl) = match request_args(key, request) {
            Ok(r) => r,
            Err(e) => return Op::fail(e),
        };
        let max_entries = if self.strict { self.max_entries() } else { 0 };
        Op::script(scripts::sharded_hash::incr(
            key,
            &request_key,
            field,
            delta,
            max_entries,
            request_ttl,
        ))
    }

    /// The total number of fields: `HLEN` of every shard, in one batch.
    pub fn len(&self) -> Op<u64> {
        let mut batch = Batch::with_capacity(self.shards() as usize);
        for key in self.shard_keys() {
            let mut cmd = redis::cmd("HLEN");
            cmd.arg(&key);
            batch.add(&key, cmd);
        }
        Op::send(batch, |replies| Ok(replies.all::<u64>()?.into_iter().sum()))
    }

    /// Whether the hash holds no field.
    pub fn is_empty(&self) -> Op<bool> {
        self.len().map(|n| n == 0)
    }

    /// Checks `OBJECT ENCODING` and `HLEN` of up to `sample` shards, spread
    /// evenly over all of them (`sample >= shards()` checks every one), in
    /// one batch.
    pub fn inspect(&self, sample: u64) -> Op<Health> {
        if sample == 0 {
            return Op::fail(Error::invalid("sample", "must be at least 1"));
        }
        let shards = self.shards();
        let picks: Vec<u64> = if sample >= shards {
            (0..shards).collect()
        } else {
            (0..sample).map(|i| i * shards / sample).collect()
        };
        let mut batch = Batch::with_capacity(2 * picks.len());
        for &s in &picks {
            let key = self.key_of_shard(s);
            let mut enc = redis::cmd("OBJECT");
            enc.arg("ENCODING").arg(&key);
            let mut len = redis::cmd("HLEN");
            len.arg(&key);
            batch.add(&key, enc).add(&key, len);
        }
        let hash = self.clone();
        Op::send(batch, move |mut replies| {
            let mut health = Health::default();
            for s in picks {
                let enc: Option<String> = replies.take()?;
                let len: u64 = replies.take()?;
                health.sampled += 1;
                health.max_len = health.max_len.max(len);
                health.sampled_len += len;
                match enc.as_deref() {
                    None => health.missing += 1,
                    Some("listpack") | Some("listpackex") | Some("ziplist") => health.listpack += 1,
                    Some(_) => {
                        health.converted += 1;
                        if health.converted_keys.len() < 100 {
                            health.converted_keys.push(hash.key_of_shard(s));
                        }
                    }
                }
            }
            Ok(health)
        })
    }
}
