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
//! - [`plan`] picks the shard count from the expected number of entries and
//!   the server's live limits ([`ListpackLimits::from_server`]) so that the
//!   *fullest* shard stays under the entry limit with overwhelming
//!   probability (exact binomial tail with a union bound over the shards,
//!   default target 1e-9), not just the average one.
//! - a strict [`ShardedHash`] (the default) refuses fields and values longer
//!   than the value limit before sending anything
//!   ([`ErrorKind::ListpackValueTooLong`]), and its writes run as one script per
//!   shard that refuses to grow a shard past the entry limit
//!   ([`ErrorKind::ShardFull`]), so no write ever converts a shard.
//! - [`ShardedHash::inspect`] samples shards' `OBJECT ENCODING` and reports
//!   how many have converted anyway (written by other clients, limits lowered).
//!
//! Keys: the logical hash `base` is stored as `base:<shard>` with the seed's
//! shard id `crc32(field) % shard_count` ([`ShardedHash::new`]), or
//! `id / fields_per_shard` for dense integer ids ([`ShardedHash::by_id`],
//! which fills shards evenly and exactly). Shard keys carry **no** common
//! hash tag, so on Redis Cluster they spread over the nodes; every script
//! touches exactly one shard key, hence one slot. Calls that touch several
//! shards (multi-get, length, multi-set, inspect, import) send one command
//! per shard: on one server ([`Topology::Standalone`], the default) all in a
//! single pipelined round trip; on Redis Cluster
//! ([`ShardedHash::topology`]`(`[`Topology::Cluster`]`)`, or
//! [`Topology::detect`]) as one pipeline per hash slot, i.e. about one round
//! trip per shard touched (shards rarely share a slot), and one command at a
//! time on redis-rs's sync `ClusterConnection`, which cannot pipeline.
//!
//! [`ShardedHash::import_lines`] is the seed's pipelined bulk load
//! (`hsetNx` of every line of a file) done as a stream: bounded line length,
//! bounded batches, set-if-absent, counts of inserted / already present /
//! rejected lines.

use std::collections::BTreeMap;
use std::io::BufRead;

use redis::{ConnectionLike, FromRedisValue, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::fanout::Batch;
pub use crate::fanout::Topology;
use crate::script::{ScriptCall, ScriptPipeline, decode_each};
use crate::scripts;

/// The listpack limits of hashes on a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListpackLimits {
    /// `hash-max-listpack-entries`: a hash with more fields converts.
    pub entries: u64,
    /// `hash-max-listpack-value`: a field or value longer than this (bytes) converts the hash.
    pub value: u64,
}

impl Default for ListpackLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl ListpackLimits {
    /// Redis's documented defaults (512 entries, 64 bytes).
    pub const DEFAULT: ListpackLimits = ListpackLimits {
        entries: 512,
        value: 64,
    };

    /// The server's live limits from `CONFIG GET`, or `None` when the server
    /// refuses `CONFIG` (renamed, ACL, managed service). Connection errors
    /// are returned as errors.
    pub fn query(con: &mut dyn ConnectionLike) -> Result<Option<Self>> {
        let Some(map) = crate::config::config_get(
            con,
            &[
                "hash-max-listpack-entries",
                "hash-max-listpack-value",
                "hash-max-ziplist-entries",
                "hash-max-ziplist-value",
            ],
        )?
        else {
            return Ok(None);
        };
        let get = |a: &str, b: &str| {
            map.get(a)
                .or_else(|| map.get(b))
                .and_then(|v| v.parse::<u64>().ok())
        };
        match (
            get("hash-max-listpack-entries", "hash-max-ziplist-entries"),
            get("hash-max-listpack-value", "hash-max-ziplist-value"),
        ) {
            (Some(entries), Some(value)) => Ok(Some(Self { entries, value })),
            _ => Ok(None),
        }
    }

    /// The server's live limits, or [`ListpackLimits::DEFAULT`] when it
    /// refuses `CONFIG`.
    pub fn from_server(con: &mut dyn ConnectionLike) -> Result<Self> {
        Ok(Self::query(con)?.unwrap_or(Self::DEFAULT))
    }
}

/// The default bound on the probability that any shard overflows.
pub const DEFAULT_OVERFLOW_TARGET: f64 = 1e-9;

/// The outcome of [`plan`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// The chosen number of shards.
    pub shards: u32,
    /// The number of entries planned for.
    pub expected: u64,
    /// The limits planned against.
    pub limits: ListpackLimits,
    /// Mean entries per shard (`expected / shards`).
    pub mean_per_shard: f64,
    /// Upper bound (union bound over shards of the exact binomial tail) on
    /// the probability that some shard gets more than `limits.entries` fields.
    pub overflow_bound: f64,
}

/// `P(X > limit)` for `X ~ Binomial(n, p)`, summed exactly from the
/// probability mass function (in log space for the first term).
pub fn binomial_tail(n: u64, p: f64, limit: u64) -> f64 {
    if limit >= n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let k0 = limit + 1;
    let nf = n as f64;
    // ln C(n, k0) + k0 ln p + (n - k0) ln(1 - p)
    let mut ln_c = 0.0;
    for i in 0..k0 {
        ln_c += ((nf - i as f64) / (i as f64 + 1.0)).ln();
    }
    let ln_q = (-p).ln_1p();
    let mut term = (ln_c + k0 as f64 * p.ln() + (nf - k0 as f64) * ln_q).exp();
    let odds = p / (1.0 - p);
    let mut sum = 0.0;
    let mut k = k0;
    loop {
        sum += term;
        if k >= n {
            break;
        }
        let ratio = (nf - k as f64) / (k as f64 + 1.0) * odds;
        term *= ratio;
        k += 1;
        // Past the mode the terms shrink geometrically.
        if ratio < 1.0 && (term == 0.0 || term < sum * 1e-17) {
            break;
        }
    }
    sum.min(1.0)
}

/// Chooses the smallest shard count for which the probability that *any*
/// shard of a crc32-sharded hash holding `expected` entries gets more than
/// `limits.entries` fields is at most `target`: `shards × P(Bin(expected,
/// 1/shards) > entries) <= target`.
pub fn plan(expected: u64, limits: ListpackLimits, target: f64) -> Result<Plan> {
    if limits.entries == 0 {
        return Err(Error::invalid(
            "hash-max-listpack-entries",
            "is 0: every hash is a hash table, sharding cannot keep listpacks",
        ));
    }
    if !(target > 0.0 && target < 1.0) {
        return Err(Error::invalid(
            "target",
            "must be a probability between 0 and 1",
        ));
    }
    let expected_n = expected.max(1);
    let bound = |s: u64| s as f64 * binomial_tail(expected_n, 1.0 / s as f64, limits.entries);
    let mut lo = expected_n.div_ceil(limits.entries).max(1);
    if bound(lo) > target {
        // Find an upper end that meets the target, then bisect.
        let mut hi = lo.saturating_mul(2);
        while bound(hi) > target {
            if hi >= u32::MAX as u64 {
                return Err(Error::invalid(
                    "expected",
                    format!(
                        "{expected} entries cannot be kept under {} per shard with at most {} shards",
                        limits.entries,
                        u32::MAX
                    ),
                ));
            }
            lo = hi;
            hi = hi.saturating_mul(2).min(u32::MAX as u64);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if bound(mid) <= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        lo = hi;
    }
    Ok(Plan {
        shards: lo as u32,
        expected,
        limits,
        mean_per_shard: expected as f64 / lo as f64,
        overflow_bound: bound(lo),
    })
}

/// How fields map to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharding {
    /// `crc32(field) % shards` (the seed's `shardKey`).
    Crc32 { shards: u32 },
    /// `id / fields_per_shard` for fields that are decimal integer ids
    /// `0..=max_id`.
    ById { fields_per_shard: u64, max_id: u64 },
}

/// A logical hash stored as listpack-sized shards `base:<shard>`. Cheap to
/// clone; holds no connection.
#[derive(Debug, Clone)]
pub struct ShardedHash {
    base: String,
    sharding: Sharding,
    limits: ListpackLimits,
    strict: bool,
    topology: Topology,
}

/// What [`ShardedHash::inspect`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// Why a line or item was not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    /// The line is empty (after removing the line ending).
    Blank,
    /// The line is longer than the configured maximum; it was skipped
    /// without being buffered. Holds its length in bytes.
    TooLong(u64),
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// In `field<TAB>value` format: no tab, or an empty field.
    NoField,
    /// The field is not a valid field of this hash (e.g. not an id in range).
    BadField(String),
    /// Strict hash: the field or value is longer than `hash-max-listpack-value`.
    ValueTooLong(usize),
    /// Strict hash: the shard would exceed `hash-max-listpack-entries`.
    ShardFull,
}

/// One rejected line (1-based line number) or item (1-based position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub line: u64,
    pub reason: RejectReason,
}

/// The counts of an import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Lines (or items) read.
    pub lines: u64,
    /// Bytes read from the input (lines and line endings).
    pub bytes: u64,
    /// Fields written because they were absent.
    pub inserted: u64,
    /// Fields left alone because they were already present.
    pub present: u64,
    /// Lines or items not imported.
    pub rejected: u64,
    /// The first 100 rejections.
    pub rejections: Vec<Rejection>,
}

impl ImportReport {
    fn reject(&mut self, line: u64, reason: RejectReason) {
        self.rejected += 1;
        if self.rejections.len() < 100 {
            self.rejections.push(Rejection { line, reason });
        }
    }
}

/// The format of an imported file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineFormat {
    /// One value per line; the field is the 0-based line index, as the
    /// seed's `explode(PHP_EOL, ...)` key (every line counts, rejected ones
    /// too, so field N is always line N + 1 of the file).
    #[default]
    LineNumber,
    /// `field<TAB>value` per line (the value may contain further tabs).
    Tsv,
}

/// Options of [`ShardedHash::import_lines`].
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    pub format: LineFormat,
    /// The longest accepted line in bytes (without its line ending); longer
    /// lines are skipped without buffering and counted as rejected.
    pub max_line: usize,
    /// Items per pipelined batch.
    pub batch: usize,
    /// Bytes of fields and values per pipelined batch.
    pub batch_bytes: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            format: LineFormat::LineNumber,
            max_line: 1 << 20,
            batch: 50_000,
            batch_bytes: 8 << 20,
        }
    }
}

impl ImportOptions {
    /// Checks the options as [`ShardedHash::import_lines`] does before it
    /// reads or sends anything.
    pub fn validate(&self) -> Result<()> {
        if self.batch == 0 || self.batch_bytes == 0 {
            return Err(Error::invalid("batch", "must be at least 1"));
        }
        if self.max_line == 0 {
            return Err(Error::invalid("max line", "must be at least 1"));
        }
        Ok(())
    }
}

/// One line read by [`read_bounded_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum BoundedLine {
    /// A line (in the buffer, without its line ending).
    Line,
    /// A line longer than the maximum, skipped; holds its length.
    TooLong(u64),
    /// End of input.
    Eof,
}

/// Reads one line into `buf` (cleared first) without ever holding more than
/// `max` bytes of it: a longer line is consumed and reported as
/// [`BoundedLine::TooLong`]. Strips `\n` and `\r\n`. Adds the bytes consumed
/// to `consumed`.
pub fn read_bounded_line<R: BufRead + ?Sized>(
    reader: &mut R,
    max: usize,
    buf: &mut Vec<u8>,
    consumed: &mut u64,
) -> std::io::Result<BoundedLine> {
    buf.clear();
    let mut len: u64 = 0;
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        len += part.len() as u64;
        if !too_long {
            if buf.len() + part.len() <= max + 1 {
                // One extra byte may be a '\r' of a "\r\n" ending.
                buf.extend_from_slice(part);
            } else {
                too_long = true;
                buf.clear();
            }
        }
        reader.consume(used);
        *consumed += used as u64;
        if done {
            break;
        }
    }
    if !any {
        return Ok(BoundedLine::Eof);
    }
    if !too_long && buf.last() == Some(&b'\r') {
        buf.pop();
        len -= 1;
    }
    if too_long || buf.len() > max {
        buf.clear();
        return Ok(BoundedLine::TooLong(len));
    }
    Ok(BoundedLine::Line)
}

/// Positions `0..` grouped by the shard at each one, shards in order and
/// positions in order within a shard.
fn group_by_shard(shards: impl IntoIterator<Item = u64>) -> BTreeMap<u64, Vec<usize>> {
    let mut by_shard: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, shard) in shards.into_iter().enumerate() {
        by_shard.entry(shard).or_default().push(i);
    }
    by_shard
}

/// The batching of an import: stages items into the pending batch and sends
/// it when it holds `batch` items or `batch_bytes` bytes of fields and values,
/// calling `progress` after every batch sent.
struct Loader<'h, 'c, P> {
    hash: &'h ShardedHash,
    con: &'c mut dyn ConnectionLike,
    report: ImportReport,
    pending: Vec<Pending>,
    pending_bytes: usize,
    batch: usize,
    batch_bytes: usize,
    progress: P,
}

impl<'h, 'c, P: FnMut(&ImportReport)> Loader<'h, 'c, P> {
    fn new(
        hash: &'h ShardedHash,
        con: &'c mut dyn ConnectionLike,
        batch: usize,
        batch_bytes: usize,
        progress: P,
    ) -> Self {
        Self {
            hash,
            con,
            report: ImportReport::default(),
            pending: Vec::with_capacity(batch.min(100_000)),
            pending_bytes: 0,
            batch,
            batch_bytes,
            progress,
        }
    }

    /// Validates and queues one item (or counts its rejection); sends the
    /// batch when it is full.
    fn push(&mut self, line: u64, field: &[u8], value: &[u8]) -> Result<()> {
        let before = self.pending.len();
        self.hash
            .stage(&mut self.report, &mut self.pending, line, field, value);
        if self.pending.len() > before {
            self.pending_bytes += field.len() + value.len();
        }
        if self.pending.len() >= self.batch || self.pending_bytes >= self.batch_bytes {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> Result<()> {
        self.hash
            .flush(self.con, &mut self.pending, &mut self.report)?;
        self.pending_bytes = 0;
        (self.progress)(&self.report);
        Ok(())
    }

    /// Sends what is left and returns the counts.
    fn finish(mut self) -> Result<ImportReport> {
        self.send()?;
        Ok(self.report)
    }
}

/// A field/value pair of an import batch with its input position.
struct Pending {
    line: u64,
    shard: u64,
    field: Vec<u8>,
    value: Vec<u8>,
}

impl ShardedHash {
    fn with_sharding(base: &str, sharding: Sharding) -> Result<Self> {
        if base.is_empty() {
            return Err(Error::invalid("base", "must not be empty"));
        }
        Ok(Self {
            base: base.to_string(),
            sharding,
            limits: ListpackLimits::DEFAULT,
            strict: true,
            topology: Topology::Standalone,
        })
    }

    /// A hash sharded by `crc32(field) % shards` over keys `base:0 ..
    /// base:<shards-1>`, strict, with the default limits (see
    /// [`ShardedHash::with_limits`], [`ShardedHash::planned`]).
    pub fn new(base: &str, shards: u32) -> Result<Self> {
        if shards == 0 {
            return Err(Error::invalid("shard count", "must be at least 1"));
        }
        Self::with_sharding(base, Sharding::Crc32 { shards })
    }

    /// A hash of integer ids `0..=max_id` (fields are their decimal form),
    /// sharded by `id / fields_per_shard`: dense ids fill every shard exactly.
    /// Keep `fields_per_shard` at or below the entry limit.
    pub fn by_id(base: &str, fields_per_shard: u64, max_id: u64) -> Result<Self> {
        if fields_per_shard == 0 {
            return Err(Error::invalid("fields per shard", "must be at least 1"));
        }
        Self::with_sharding(
            base,
            Sharding::ById {
                fields_per_shard,
                max_id,
            },
        )
    }

    /// Reads the server's limits, plans for `expected` entries
    /// ([`DEFAULT_OVERFLOW_TARGET`]) and returns the hash with its plan.
    pub fn planned(
        con: &mut dyn ConnectionLike,
        base: &str,
        expected: u64,
    ) -> Result<(Self, Plan)> {
        if base.is_empty() {
            return Err(Error::invalid("base", "must not be empty"));
        }
        let limits = ListpackLimits::from_server(con)?;
        let plan = plan(expected, limits, DEFAULT_OVERFLOW_TARGET)?;
        Ok((Self::from_plan(base, &plan)?, plan))
    }

    /// The hash a [`Plan`] describes (its shard count and limits).
    pub fn from_plan(base: &str, plan: &Plan) -> Result<Self> {
        Ok(Self::new(base, plan.shards)?.with_limits(plan.limits))
    }

    /// Sets the limits that strict writes enforce.
    pub fn with_limits(mut self, limits: ListpackLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Strict (the default): fields or values over the value limit are
    /// refused before anything is sent, and writes refuse to push a shard
    /// past the entry limit. Not strict: writes are plain `HSET`/`HSETNX`
    /// and such writes convert their shard (see [`ShardedHash::inspect`]).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Sets how calls that touch several shards are sent: on Redis Cluster
    /// pass [`Topology::Cluster`] (or [`Topology::detect`]'s answer) so they
    /// go as one pipeline per hash slot. Default [`Topology::Standalone`]:
    /// one pipeline.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    pub fn limits(&self) -> ListpackLimits {
        self.limits
    }

    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The number of shard keys.
    pub fn shard_count(&self) -> u64 {
        match self.sharding {
            Sharding::Crc32 { shards } => shards as u64,
            Sharding::ById {
                fields_per_shard,
                max_id,
            } => max_id / fields_per_shard + 1,
        }
    }

    /// The key of shard `shard`: `base:<shard>`.
    pub fn key_of_shard(&self, shard: u64) -> String {
        format!("{}:{shard}", self.base)
    }

    /// Every shard key, in shard order.
    pub fn shard_keys(&self) -> impl Iterator<Item = String> + '_ {
        (0..self.shard_count()).map(|s| self.key_of_shard(s))
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
                                "{:?} is not a decimal integer id",
                                String::from_utf8_lossy(field)
                            ),
                        )
                    })?;
                if id > max_id {
                    return Err(Error::from(ErrorKind::IdOutOfRange { id, max: max_id }));
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
                return Err(Error::from(ErrorKind::ListpackValueTooLong {
                    what,
                    len,
                    limit: self.limits.value as usize,
                }));
            }
        }
        Ok(())
    }

    /// The entry limit strict writes pass to their script (only strict
    /// writes run one).
    fn max_entries(&self) -> i64 {
        self.limits.entries.min(i64::MAX as u64) as i64
    }

    fn write_one(
        &self,
        con: &mut dyn ConnectionLike,
        field: &[u8],
        value: &[u8],
        only_absent: bool,
    ) -> Result<bool> {
        let key = self.shard_key(field)?;
        self.check_pair(field, value)?;
        if self.strict {
            let n =
                scripts::sharded_hash::put(&key, only_absent, self.max_entries(), &[field, value])?
                    .invoke(con)?;
            Ok(n == 1)
        } else {
            let cmd = if only_absent { "HSETNX" } else { "HSET" };
            let n: i64 = redis::cmd(cmd).arg(&key).arg(field).arg(value).query(con)?;
            Ok(n == 1)
        }
    }

    /// Sets a field; returns whether it was new.
    pub fn set(
        &self,
        con: &mut dyn ConnectionLike,
        field: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<bool> {
        self.write_one(con, field.as_ref(), value.as_ref(), false)
    }

    /// Sets a field only if it is absent (`HSETNX`); returns whether it was set.
    pub fn set_if_absent(
        &self,
        con: &mut dyn ConnectionLike,
        field: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<bool> {
        self.write_one(con, field.as_ref(), value.as_ref(), true)
    }

    /// Sets many fields: one write per shard touched, all in one round trip
    /// on one server (per slot on a cluster); each shard's part is atomic.
    /// Returns how many fields were new. Every pair is validated before
    /// anything is sent.
    pub fn set_many<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        pairs: &[(F, V)],
    ) -> Result<u64> {
        self.write_many(con, pairs, false)
    }

    /// Like [`ShardedHash::set_many`] but keeps fields that exist (of a field
    /// given twice the first value wins). Returns how many were inserted.
    pub fn set_if_absent_many<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        pairs: &[(F, V)],
    ) -> Result<u64> {
        self.write_many(con, pairs, true)
    }

    fn write_many<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        pairs: &[(F, V)],
        only_absent: bool,
    ) -> Result<u64> {
        let mut shards = Vec::with_capacity(pairs.len());
        for (f, v) in pairs {
            let (f, v) = (f.as_ref(), v.as_ref());
            shards.push(self.shard_of(f)?);
            self.check_pair(f, v)?;
        }
        let by_shard = group_by_shard(shards);
        if by_shard.is_empty() {
            return Ok(0);
        }
        let pair = |i: usize| (pairs[i].0.as_ref(), pairs[i].1.as_ref());
        if self.strict {
            let calls = self.put_calls(&by_shard, only_absent, pair)?;
            let mut total = 0u64;
            for count in self.run_puts(con, calls)? {
                total += count? as u64;
            }
            Ok(total)
        } else {
            let mut batch = Batch::new();
            for (shard, idx) in &by_shard {
                let key = self.key_of_shard(*shard);
                if only_absent {
                    for &i in idx {
                        let (f, v) = pair(i);
                        let mut cmd = redis::cmd("HSETNX");
                        cmd.arg(&key).arg(f).arg(v);
                        batch.add(&key, cmd);
                    }
                } else {
                    let mut cmd = redis::cmd("HSET");
                    cmd.arg(&key);
                    for &i in idx {
                        let (f, v) = pair(i);
                        cmd.arg(f).arg(v);
                    }
                    batch.add(&key, cmd);
                }
            }
            let replies: Vec<i64> = batch.query(con, self.topology)?;
            Ok(replies.iter().sum::<i64>() as u64)
        }
    }

    /// Strict multi-write: one `put` per shard of `by_shard` (shard ->
    /// positions, see [`group_by_shard`]), in shard order, each carrying the
    /// field/value pairs `pair(position)` of its positions in order.
    fn put_calls<'a>(
        &self,
        by_shard: &BTreeMap<u64, Vec<usize>>,
        only_absent: bool,
        pair: impl Fn(usize) -> (&'a [u8], &'a [u8]),
    ) -> Result<Vec<ScriptCall<i64>>> {
        by_shard
            .iter()
            .map(|(shard, idx)| {
                let items: Vec<&[u8]> = idx
                    .iter()
                    .flat_map(|&i| {
                        let (f, v) = pair(i);
                        [f, v]
                    })
                    .collect();
                scripts::sharded_hash::put(
                    &self.key_of_shard(*shard),
                    only_absent,
                    self.max_entries(),
                    &items,
                )
            })
            .collect()
    }

    /// Runs `put` calls (one per shard) and returns each one's own result in
    /// order, so a shard refused as full never stops the others (pipelined per
    /// [`ShardedHash::topology`]; one at a time where the connection cannot
    /// pipeline). A connection error ends the whole run.
    fn run_puts(
        &self,
        con: &mut dyn ConnectionLike,
        calls: Vec<ScriptCall<i64>>,
    ) -> Result<Vec<Result<i64>>> {
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        for call in calls {
            pipe.push(call);
        }
        let values = pipe.query_values(con)?;
        Ok(decode_each(&pipe, values))
    }

    /// The value of a field, `None` when absent.
    pub fn get<V: FromRedisValue>(
        &self,
        con: &mut dyn ConnectionLike,
        field: impl AsRef<[u8]>,
    ) -> Result<Option<V>> {
        let field = field.as_ref();
        Ok(redis::cmd("HGET")
            .arg(self.shard_key(field)?)
            .arg(field)
            .query(con)?)
    }

    /// The values of many fields, in the order asked (`None` for absent
    /// ones): one `HMGET` per shard touched, all in one round trip on one
    /// server (per slot on a cluster, see [`ShardedHash::topology`]).
    pub fn get_many<V: FromRedisValue, F: AsRef<[u8]>>(
        &self,
        con: &mut dyn ConnectionLike,
        fields: &[F],
    ) -> Result<Vec<Option<V>>> {
        let mut by_shard: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, f) in fields.iter().enumerate() {
            by_shard
                .entry(self.shard_of(f.as_ref())?)
                .or_default()
                .push(i);
        }
        let mut out: Vec<Option<V>> = (0..fields.len()).map(|_| None).collect();
        if by_shard.is_empty() {
            return Ok(out);
        }
        let mut batch = Batch::new();
        for (shard, idx) in &by_shard {
            let key = self.key_of_shard(*shard);
            let mut cmd = redis::cmd("HMGET");
            cmd.arg(&key);
            for &i in idx {
                cmd.arg(fields[i].as_ref());
            }
            batch.add(&key, cmd);
        }
        let replies: Vec<Vec<Value>> = batch.query(con, self.topology)?;
        for ((_, idx), values) in by_shard.iter().zip(replies) {
            if values.len() != idx.len() {
                return Err(Error::short_reply());
            }
            for (&i, v) in idx.iter().zip(values) {
                out[i] = Option::<V>::from_redis_value(v).map_err(redis::RedisError::from)?;
            }
        }
        Ok(out)
    }

    /// Deletes a field; returns whether it existed.
    pub fn delete(&self, con: &mut dyn ConnectionLike, field: impl AsRef<[u8]>) -> Result<bool> {
        let field = field.as_ref();
        let n: i64 = redis::cmd("HDEL")
            .arg(self.shard_key(field)?)
            .arg(field)
            .query(con)?;
        Ok(n == 1)
    }

    /// Whether a field exists.
    pub fn exists(&self, con: &mut dyn ConnectionLike, field: impl AsRef<[u8]>) -> Result<bool> {
        let field = field.as_ref();
        let n: i64 = redis::cmd("HEXISTS")
            .arg(self.shard_key(field)?)
            .arg(field)
            .query(con)?;
        Ok(n == 1)
    }

    /// Adds `delta` to an integer field (missing counts as 0) and returns the
    /// new value. Strict: a new field is refused ([`ErrorKind::ShardFull`]) when
    /// its shard is already at the entry limit.
    pub fn incr(
        &self,
        con: &mut dyn ConnectionLike,
        field: impl AsRef<[u8]>,
        delta: i64,
    ) -> Result<i64> {
        let field = field.as_ref();
        let key = self.shard_key(field)?;
        // The value is at most 20 characters ("-9223372036854775808").
        self.check_pair(field, b"")?;
        if self.strict {
            scripts::sharded_hash::incr(&key, field, delta, self.max_entries())?.invoke(con)
        } else {
            Ok(redis::cmd("HINCRBY")
                .arg(&key)
                .arg(field)
                .arg(delta)
                .query(con)?)
        }
    }

    /// The total number of fields: `HLEN` of every shard, pipelined (one
    /// round trip per 10,000 shards on one server; on a cluster one per slot).
    pub fn len(&self, con: &mut dyn ConnectionLike) -> Result<u64> {
        let mut total = 0u64;
        let shards = self.shard_count();
        let mut start = 0;
        while start < shards {
            let end = (start + 10_000).min(shards);
            let mut batch = Batch::new();
            for s in start..end {
                let key = self.key_of_shard(s);
                let mut cmd = redis::cmd("HLEN");
                cmd.arg(&key);
                batch.add(&key, cmd);
            }
            let lens: Vec<u64> = batch.query(con, self.topology)?;
            total += lens.iter().sum::<u64>();
            start = end;
        }
        Ok(total)
    }

    /// Whether the hash holds no field.
    pub fn is_empty(&self, con: &mut dyn ConnectionLike) -> Result<bool> {
        Ok(self.len(con)? == 0)
    }

    /// Checks `OBJECT ENCODING` and `HLEN` of up to `sample` shards, spread
    /// evenly over all of them (`sample >= shard_count()` checks every one),
    /// pipelined.
    pub fn inspect(&self, con: &mut dyn ConnectionLike, sample: u64) -> Result<Health> {
        if sample == 0 {
            return Err(Error::invalid("sample", "must be at least 1"));
        }
        let shards = self.shard_count();
        let picks: Vec<u64> = if sample >= shards {
            (0..shards).collect()
        } else {
            (0..sample).map(|i| i * shards / sample).collect()
        };
        let mut health = Health::default();
        for chunk in picks.chunks(5_000) {
            let mut batch = Batch::new();
            for &s in chunk {
                let key = self.key_of_shard(s);
                let mut enc = redis::cmd("OBJECT");
                enc.arg("ENCODING").arg(&key);
                let mut len = redis::cmd("HLEN");
                len.arg(&key);
                batch.add(&key, enc).add(&key, len);
            }
            // Batch::query answers every command: two replies per shard.
            let mut replies = batch.query::<Value>(con, self.topology)?.into_iter();
            let pairs = std::iter::from_fn(|| Some((replies.next()?, replies.next()?)));
            for (&s, (enc, len)) in chunk.iter().zip(pairs) {
                health.sampled += 1;
                let enc: Option<String> =
                    Option::from_redis_value(enc).map_err(redis::RedisError::from)?;
                let len = u64::from_redis_value(len).map_err(redis::RedisError::from)?;
                health.max_len = health.max_len.max(len);
                health.sampled_len += len;
                match enc.as_deref() {
                    None => health.missing += 1,
                    Some("listpack") | Some("ziplist") => health.listpack += 1,
                    Some(_) => {
                        health.converted += 1;
                        if health.converted_keys.len() < 100 {
                            health.converted_keys.push(self.key_of_shard(s));
                        }
                    }
                }
            }
        }
        Ok(health)
    }

    /// Imports `(field, value)` items with set-if-absent, in pipelined
    /// batches of `batch` items. Items that fail validation are counted as
    /// rejected (1-based positions), not fatal; a strict shard that would
    /// overflow rejects its part of the batch. `progress` is called after
    /// every batch.
    pub fn import<I, F, V>(
        &self,
        con: &mut dyn ConnectionLike,
        items: I,
        batch: usize,
        progress: impl FnMut(&ImportReport),
    ) -> Result<ImportReport>
    where
        I: IntoIterator<Item = (F, V)>,
        F: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        if batch == 0 {
            return Err(Error::invalid("batch", "must be at least 1"));
        }
        let mut load = Loader::new(self, con, batch, usize::MAX, progress);
        for (f, v) in items {
            load.report.lines += 1;
            let (f, v) = (f.as_ref(), v.as_ref());
            load.report.bytes += (f.len() + v.len()) as u64;
            let line = load.report.lines;
            load.push(line, f, v)?;
        }
        load.finish()
    }

    /// Streams lines from `reader` into the hash with set-if-absent (the
    /// seed's pipelined `hsetNx` load), never holding more than one batch and
    /// one bounded line in memory. Blank, over-long, non-UTF-8 and malformed
    /// lines are counted as rejected. An I/O error stops the import with the
    /// error; the batches sent before it stay written.
    pub fn import_lines<R: BufRead>(
        &self,
        con: &mut dyn ConnectionLike,
        mut reader: R,
        options: ImportOptions,
        progress: impl FnMut(&ImportReport),
    ) -> Result<ImportReport> {
        options.validate()?;
        let mut load = Loader::new(self, con, options.batch, options.batch_bytes, progress);
        let mut buf = Vec::new();
        let mut bytes = 0u64;
        loop {
            let outcome = read_bounded_line(&mut reader, options.max_line, &mut buf, &mut bytes)
                .map_err(|e| Error::invalid("input", format!("read failed: {e}")))?;
            load.report.bytes = bytes;
            let line = match outcome {
                BoundedLine::Eof => break,
                BoundedLine::TooLong(len) => {
                    load.report.lines += 1;
                    load.report
                        .reject(load.report.lines, RejectReason::TooLong(len));
                    continue;
                }
                BoundedLine::Line => {
                    load.report.lines += 1;
                    load.report.lines
                }
            };
            if buf.is_empty() {
                load.report.reject(line, RejectReason::Blank);
                continue;
            }
            let Ok(text) = std::str::from_utf8(&buf) else {
                load.report.reject(line, RejectReason::InvalidUtf8);
                continue;
            };
            let index;
            let (field, value) = match options.format {
                LineFormat::LineNumber => {
                    index = (line - 1).to_string();
                    (index.as_bytes(), text.as_bytes())
                }
                LineFormat::Tsv => match text.split_once('\t') {
                    Some((f, v)) if !f.is_empty() => (f.as_bytes(), v.as_bytes()),
                    _ => {
                        load.report.reject(line, RejectReason::NoField);
                        continue;
                    }
                },
            };
            load.push(line, field, value)?;
        }
        load.finish()
    }

    /// Validates one item and queues it, or counts its rejection.
    fn stage(
        &self,
        report: &mut ImportReport,
        pending: &mut Vec<Pending>,
        line: u64,
        field: &[u8],
        value: &[u8],
    ) {
        let shard = match self.shard_of(field) {
            Ok(s) => s,
            Err(e) => {
                report.reject(line, RejectReason::BadField(e.to_string()));
                return;
            }
        };
        if let Err(ErrorKind::ListpackValueTooLong { len, .. }) =
            self.check_pair(field, value).map_err(Error::into_kind)
        {
            report.reject(line, RejectReason::ValueTooLong(len));
            return;
        }
        pending.push(Pending {
            line,
            shard,
            field: field.to_vec(),
            value: value.to_vec(),
        });
    }

    /// Sends one batch: strict, one `put` script per shard touched; otherwise
    /// one `HSETNX` per item; all pipelined in one round trip on one server
    /// (per slot on a cluster).
    fn flush(
        &self,
        con: &mut dyn ConnectionLike,
        pending: &mut Vec<Pending>,
        report: &mut ImportReport,
    ) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        if self.strict {
            let by_shard = group_by_shard(pending.iter().map(|p| p.shard));
            let calls = self.put_calls(&by_shard, true, |i| {
                (pending[i].field.as_slice(), pending[i].value.as_slice())
            })?;
            let results = self.run_puts(con, calls)?;
            for ((_, idx), result) in by_shard.iter().zip(results) {
                match result {
                    Ok(inserted) => {
                        report.inserted += inserted as u64;
                        report.present += idx.len() as u64 - inserted as u64;
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::ShardFull { .. }) => {
                        for &i in idx {
                            report.reject(pending[i].line, RejectReason::ShardFull);
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        } else {
            let mut batch = Batch::new();
            for p in pending.iter() {
                let key = self.key_of_shard(p.shard);
                let mut cmd = redis::cmd("HSETNX");
                cmd.arg(&key).arg(&p.field).arg(&p.value);
                batch.add(&key, cmd);
            }
            let replies: Vec<i64> = batch.query(con, self.topology)?;
            let inserted = replies.iter().filter(|&&r| r == 1).count() as u64;
            report.inserted += inserted;
            report.present += pending.len() as u64 - inserted;
        }
        pending.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_matches_small_exact_values() {
        // Bin(10, 0.5): P(X > 7) = (45 + 10 + 1) / 1024
        let t = binomial_tail(10, 0.5, 7);
        assert!((t - 56.0 / 1024.0).abs() < 1e-12, "{t}");
        assert_eq!(binomial_tail(10, 0.5, 10), 0.0);
    }

    #[test]
    fn plan_is_not_the_mean() {
        let p = plan(1_000_000, ListpackLimits::DEFAULT, 1e-9).unwrap();
        assert!(p.shards as u64 > 1_000_000 / 512 + 1);
        assert!(p.overflow_bound <= 1e-9);
        // One shard fewer would not meet the target.
        let s = p.shards as u64 - 1;
        assert!(s as f64 * binomial_tail(1_000_000, 1.0 / s as f64, 512) > 1e-9);
        assert!(
            plan(
                10,
                ListpackLimits {
                    entries: 0,
                    value: 64
                },
                1e-9
            )
            .is_err()
        );
    }

    #[test]
    fn bounded_lines() {
        let data = b"ab\r\n\nxxxxxxxxxx\nlast";
        let mut r = &data[..];
        let mut buf = Vec::new();
        let mut n = 0;
        assert_eq!(
            read_bounded_line(&mut r, 4, &mut buf, &mut n).unwrap(),
            BoundedLine::Line
        );
        assert_eq!(buf, b"ab");
        assert_eq!(
            read_bounded_line(&mut r, 4, &mut buf, &mut n).unwrap(),
            BoundedLine::Line
        );
        assert!(buf.is_empty());
        assert_eq!(
            read_bounded_line(&mut r, 4, &mut buf, &mut n).unwrap(),
            BoundedLine::TooLong(10)
        );
        assert_eq!(
            read_bounded_line(&mut r, 4, &mut buf, &mut n).unwrap(),
            BoundedLine::Line
        );
        assert_eq!(buf, b"last");
        assert_eq!(
            read_bounded_line(&mut r, 4, &mut buf, &mut n).unwrap(),
            BoundedLine::Eof
        );
        assert_eq!(n, data.len() as u64);
    }
}
