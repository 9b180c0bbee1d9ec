//! Exact daily unique visitors in sharded integer sets (`lua/visits/`).
//!
//! The seed's `ShardSet::count` checks `SISMEMBER`, then `SADD`, `INCR`,
//! `TTL`, `EXPIREAT`, `TTL`, `EXPIREAT` in seven round trips: two concurrent
//! first visits of one member are both counted, a crash between `SADD` and
//! `INCR` loses one, and its `shardKey` divides by an undefined variable. Here
//! one script adds the member to its shard set, increments the day's counter
//! only when the member is new and sets `EXPIREAT` to the end of that day in a
//! configurable time zone (plus an optional grace period), so the counter
//! always equals the number of distinct members.
//!
//! # Keys
//!
//! For counter `name` and day `YYYY-MM-DD` (the day in the counter's zone):
//! `<prefix>{<name>:<YYYY-MM-DD>}:<i>` for shard `i` in `0..shards`, and
//! `<prefix>{<name>:<YYYY-MM-DD>}:count` for the counter. Every key of one day
//! shares the hash tag `{<name>:<YYYY-MM-DD>}`, so each script call touches
//! one cluster slot. The default prefix is `visits:`.
//!
//! # Shards and `intset`
//!
//! Members are integers so shards stay `intset`-encoded (4 bytes per
//! member for values in the `i32` range, 8 for larger `i64`). A member goes to
//! shard `crc32(decimal string of the member) % shards` — the decimal ASCII
//! form, as PHP's `crc32($member)` hashes it, not the little-endian bytes. A
//! shard converts to a hashtable (about 15 times larger) once it holds more
//! than `set-max-intset-entries` (default 512) members, so
//! [`plan_shards`] picks the shard count from the expected daily uniques such
//! that the fullest shard stays below that limit with a wide margin.
//!
//! String ids: [`member_from_string_id`] maps them to `i32` values with CRC32
//! (the seed takes 8 hex digits of an md5 instead; note that those values go
//! up to 2^32-1 and so force the 8-byte `int64` intset encoding). Any such
//! mapping may collide: two ids with one value count once.
//!
//! # Several days
//!
//! Each day has its own hash tag, so on a cluster the days of a range live in
//! different slots and no single script (and no `SUNIONSTORE`) can see them
//! together. [`VisitCounter::distinct_over`] therefore unions client-side,
//! shard index by shard index: the shard function does not depend on the
//! day, so member `m` is in shard `i` on every day and the union's size is
//! the sum over `i` of the size of the union of shard `i` across the days. It
//! fetches shard sets with pipelined `SMEMBERS` (single-key commands sent as a
//! [`Batch`]) a few shard indices at a time, so client memory is bounded by
//! one chunk. This requires the same shard count on every day of the range (a
//! counter keeps its shard count; changing it starts a new layout).
//!
//! # Redis Cluster
//!
//! Every script call touches the keys of one day, so it runs on a cluster
//! unchanged. Operations that send several commands together
//! ([`VisitCounter::add_pipelined`], [`VisitCounter::shard_sizes`],
//! [`VisitCounter::distinct_over`]) go through [`Batch`] /
//! [`ScriptPipeline::topology`]: give the counter [`Topology::Cluster`] (or
//! [`Topology::detect`]) with [`VisitCounter::topology`] and they are sent as
//! one pipeline per hash slot (one command at a time on redis-rs's sync
//! `ClusterConnection`, which cannot pipeline). The default,
//! [`Topology::Standalone`], sends one pipeline.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc};
use redis::ConnectionLike;

use crate::error::{Error, Result};
use crate::fanout::Batch;
pub use crate::fanout::Topology;
use crate::keys;
use crate::script::ScriptPipeline;
use crate::scripts;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "visits:";

/// Redis's default `set-max-intset-entries`.
pub const DEFAULT_MAX_INTSET_ENTRIES: u64 = 512;

/// The most shards a counter may have.
pub const MAX_SHARDS: u32 = 1 << 20;

/// Shard indices fetched per pipeline by [`VisitCounter::distinct_over`].
const UNION_CHUNK: u32 = 64;

/// The shard of `member` among `shards`: `crc32(decimal string) % shards`.
pub fn shard_of(member: i64, shards: u32) -> u32 {
    crc32fast::hash(member.to_string().as_bytes()) % shards.max(1)
}

/// Parses a member given as text. Only a canonical decimal `i64` is accepted
/// (no sign on zero, no leading zeros, no spaces): anything else would make
/// Redis store the shard as a hashtable instead of an intset.
pub fn parse_member(text: &str) -> Result<i64> {
    let canonical = match text.strip_prefix('-') {
        Some(rest) => !rest.is_empty() && !rest.starts_with('0'),
        None => text == "0" || !text.starts_with('0'),
    } && text
        .trim_start_matches('-')
        .bytes()
        .all(|b| b.is_ascii_digit());
    let value = text.parse::<i64>().ok().filter(|_| canonical);
    value.ok_or_else(|| {
        Error::invalid(
            "member",
            format!("{text:?} is not a canonical decimal integer (i64)"),
        )
    })
}

/// Maps a string id to an integer member: `crc32(id)` reinterpreted as `i32`,
/// so shards keep the 4-byte intset encoding.
///
/// **It may collide**: distinct ids with one value count once. With `n`
/// distinct ids a day about `n² / 2³³` pairs collide (about 116 for one
/// million ids, an undercount of about 0.01 %). Use real integer ids when the
/// count must be exact.
pub fn member_from_string_id(id: &str) -> i64 {
    crc32fast::hash(id.as_bytes()) as i32 as i64
}

/// The shard count for `expected_daily_uniques` members with
/// `max_intset_entries` (the server's `set-max-intset-entries`).
///
/// With a uniform shard function a shard's size is about Poisson with mean
/// `m = expected / shards`; the plan keeps `m + 4·√m <= max_intset_entries`
/// (for 512: a mean of about 429 members, 2,330 shards for a million). The
/// fullest of a few thousand shards then usually stays an intset; on an
/// unlucky day one shard may pass the limit and become a hashtable (~30 KB,
/// about 0.03 bytes per member at a million), which costs less than the
/// per-key overhead of the extra shards a wider margin would need.
pub fn plan_shards(expected_daily_uniques: u64, max_intset_entries: u64) -> Result<u32> {
    if expected_daily_uniques == 0 {
        return Err(Error::invalid(
            "expected daily uniques",
            "must be at least 1",
        ));
    }
    if max_intset_entries < 64 {
        return Err(Error::invalid(
            "max intset entries",
            format!("{max_intset_entries} is too small to plan shards (at least 64)"),
        ));
    }
    let limit = max_intset_entries as f64;
    // m + 4 sqrt(m) = limit  =>  sqrt(m) = (-4 + sqrt(16 + 4 limit)) / 2
    let root = (-4.0 + (16.0 + 4.0 * limit).sqrt()) / 2.0;
    let mean = (root * root).floor().max(1.0);
    let shards = (expected_daily_uniques as f64 / mean).ceil() as u64;
    if shards > MAX_SHARDS as u64 {
        return Err(Error::invalid(
            "expected daily uniques",
            format!("{expected_daily_uniques} needs more than {MAX_SHARDS} shards"),
        ));
    }
    Ok(shards.max(1) as u32)
}

/// The server's `set-max-intset-entries` (`CONFIG GET`), or the default 512
/// when the server refuses `CONFIG` (e.g. renamed away on managed servers)
/// or does not report the parameter. Connection errors are returned.
pub fn max_intset_entries(con: &mut dyn ConnectionLike) -> Result<u64> {
    const NAME: &str = "set-max-intset-entries";
    let Some(config) = crate::config::config_get(con, &[NAME])? else {
        return Ok(DEFAULT_MAX_INTSET_ENTRIES);
    };
    Ok(config
        .get(NAME)
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_MAX_INTSET_ENTRIES))
}

/// When a day's keys expire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// At the first instant of the next day in the counter's zone, plus a
    /// grace period (for late readers). The default, with no grace.
    EndOfDay { grace: Duration },
    /// Never (keep history; delete days yourself).
    Never,
}

/// A prepared batch call and, per member given, the position of its flag in
/// the reply (`None` for a repeat within the batch).
type BatchCall = (crate::ScriptCall<Vec<i64>>, Vec<Option<usize>>);

/// The outcome of one visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visit {
    /// The member had not been counted that day.
    pub new: bool,
    /// The day's distinct count after this visit.
    pub count: u64,
}

/// The outcome of a batch of visits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchVisits {
    /// The day's distinct count after the batch.
    pub count: u64,
    /// Per member, in the order given: counted for the first time by this
    /// batch (a member repeated within the batch is new at most once).
    pub new: Vec<bool>,
}

/// A daily unique-visitor counter in the zone `Tz` (`chrono::Utc`,
/// `chrono::FixedOffset`, a `chrono_tz::Tz`...). Cheap to clone; holds no
/// connection.
#[derive(Debug, Clone)]
pub struct VisitCounter<Tz: TimeZone> {
    prefix: String,
    name: String,
    shards: u32,
    tz: Tz,
    expiry: Expiry,
    topology: Topology,
}

fn count_of(v: i64) -> u64 {
    v.max(0) as u64
}

impl<Tz: TimeZone> VisitCounter<Tz> {
    /// A counter named `name` with `shards` shard sets per day, whose days
    /// are calendar days in `tz`; keys expire at the end of their day.
    pub fn new(name: &str, tz: Tz, shards: u32) -> Result<Self> {
        Self::with_prefix(DEFAULT_PREFIX, name, tz, shards)
    }

    /// Like [`VisitCounter::new`] with another key prefix.
    pub fn with_prefix(prefix: &str, name: &str, tz: Tz, shards: u32) -> Result<Self> {
        crate::keys::check_name("prefix", prefix)?;
        keys::check_name("counter name", name)?;
        if shards == 0 || shards > MAX_SHARDS {
            return Err(Error::invalid(
                "shards",
                format!("must be from 1 to {MAX_SHARDS}, got {shards}"),
            ));
        }
        Ok(Self {
            prefix: prefix.to_string(),
            name: name.to_string(),
            shards,
            tz,
            expiry: Expiry::EndOfDay {
                grace: Duration::ZERO,
            },
            topology: Topology::Standalone,
        })
    }

    /// A counter whose shard count is planned ([`plan_shards`]) from the
    /// expected daily uniques and the server's `set-max-intset-entries`.
    pub fn planned(
        con: &mut dyn ConnectionLike,
        name: &str,
        tz: Tz,
        expected_daily_uniques: u64,
    ) -> Result<Self> {
        let shards = plan_shards(expected_daily_uniques, max_intset_entries(con)?)?;
        Self::new(name, tz, shards)
    }

    /// Keys expire `grace` after the end of their day (whole seconds).
    pub fn grace(mut self, grace: Duration) -> Result<Self> {
        if grace.subsec_nanos() != 0 || grace.as_secs() > 366 * 86_400 {
            return Err(Error::invalid(
                "grace",
                "must be whole seconds, at most 366 days",
            ));
        }
        self.expiry = Expiry::EndOfDay { grace };
        Ok(self)
    }

    /// Keys never expire.
    pub fn no_expiry(mut self) -> Self {
        self.expiry = Expiry::Never;
        self
    }

    /// How multi-command operations are sent (see the module docs); the
    /// default is [`Topology::Standalone`].
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    pub fn shards(&self) -> u32 {
        self.shards
    }

    pub fn expiry(&self) -> Expiry {
        self.expiry
    }

    pub fn time_zone(&self) -> &Tz {
        &self.tz
    }

    /// The calendar day of `instant` in the counter's zone.
    pub fn day_of<Z: TimeZone>(&self, instant: &DateTime<Z>) -> NaiveDate {
        instant.with_timezone(&self.tz).date_naive()
    }

    /// The first instant of the day after `day` in the counter's zone (the
    /// seed's "23:59:59" plus one second, but correct on 23- and 25-hour
    /// days). When local midnight falls in a DST gap it is the first local
    /// time after the gap; when it is ambiguous, the earlier one.
    pub fn end_of_day(&self, day: NaiveDate) -> Result<DateTime<Utc>> {
        let next = day
            .succ_opt()
            .ok_or_else(|| Error::invalid("day", format!("{day} has no next day")))?;
        let midnight: NaiveDateTime = next.and_time(chrono::NaiveTime::MIN);
        // A gap lasts at most a few hours; step a minute at a time.
        for minute in 0..=24 * 60 {
            let local = midnight + chrono::TimeDelta::minutes(minute);
            match self.tz.from_local_datetime(&local) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => {
                    return Ok(t.with_timezone(&Utc));
                }
                LocalResult::None => continue,
            }
        }
        Err(Error::invalid(
            "day",
            format!("{day}: the zone has no valid local time on the next day"),
        ))
    }

    /// The `EXPIREAT` (unix seconds) of `day`'s keys, `None` without expiry.
    pub fn expire_at(&self, day: NaiveDate) -> Result<Option<i64>> {
        match self.expiry {
            Expiry::Never => Ok(None),
            Expiry::EndOfDay { grace } => {
                let at = self.end_of_day(day)?.timestamp() + grace.as_secs() as i64;
                if at <= 0 || at > 999_999_999_999_999 {
                    return Err(Error::invalid(
                        "day",
                        format!("{day} ends outside the unix time range"),
                    ));
                }
                Ok(Some(at))
            }
        }
    }

    fn expire_arg(&self, day: NaiveDate) -> Result<i64> {
        Ok(self.expire_at(day)?.unwrap_or(0))
    }

    fn day_tag(&self, day: NaiveDate) -> String {
        keys::tagged(
            &self.prefix,
            &format!("{}:{}", self.name, day.format("%Y-%m-%d")),
        )
    }

    /// The day's counter key.
    pub fn counter_key(&self, day: NaiveDate) -> String {
        format!("{}:count", self.day_tag(day))
    }

    /// The key of shard `index` of `day`.
    pub fn shard_key(&self, day: NaiveDate, index: u32) -> String {
        format!("{}:{index}", self.day_tag(day))
    }

    /// Every shard key of `day`, by index.
    pub fn shard_keys(&self, day: NaiveDate) -> Vec<String> {
        let tag = self.day_tag(day);
        (0..self.shards).map(|i| format!("{tag}:{i}")).collect()
    }

    /// The key of `member`'s shard on `day`.
    pub fn member_shard_key(&self, day: NaiveDate, member: i64) -> String {
        self.shard_key(day, shard_of(member, self.shards))
    }

    fn add_call(&self, day: NaiveDate, member: i64) -> Result<crate::ScriptCall<Vec<i64>>> {
        scripts::visits::add(
            &self.counter_key(day),
            &self.member_shard_key(day, member),
            self.expire_arg(day)?,
            member,
        )
    }

    fn visit(reply: Vec<i64>) -> Result<Visit> {
        match reply.as_slice() {
            [new, count] => Ok(Visit {
                new: *new == 1,
                count: count_of(*count),
            }),
            _ => Err(Error::short_reply()),
        }
    }

    /// Counts one visit of `member` on `day` (one script call).
    pub fn add(&self, con: &mut dyn ConnectionLike, day: NaiveDate, member: i64) -> Result<Visit> {
        Self::visit(self.add_call(day, member)?.invoke(con)?)
    }

    /// Counts a visit at `instant` (on its day in the counter's zone).
    pub fn add_at<Z: TimeZone>(
        &self,
        con: &mut dyn ConnectionLike,
        instant: &DateTime<Z>,
        member: i64,
    ) -> Result<Visit> {
        self.add(con, self.day_of(instant), member)
    }

    /// Async twin of [`VisitCounter::add`].
    pub async fn add_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        day: NaiveDate,
        member: i64,
    ) -> Result<Visit> {
        let call = self.add_call(day, member)?;
        Self::visit(call.invoke_async(con).await?)
    }

    fn pipelined_calls(&self, day: NaiveDate, members: &[i64]) -> Result<ScriptPipeline> {
        let expire = self.expire_arg(day)?;
        let tag = self.day_tag(day);
        let counter = format!("{tag}:count");
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        for &m in members {
            pipe.push(scripts::visits::add(
                &counter,
                &format!("{tag}:{}", shard_of(m, self.shards)),
                expire,
                m,
            )?);
        }
        Ok(pipe)
    }

    /// Counts each member with its own script call, all sent in one pipeline
    /// (one round trip; each call atomic on its own). The keys of one day
    /// share a slot, so on a cluster it is one pipeline too, except on
    /// redis-rs's sync `ClusterConnection`, which gets one call at a time.
    pub fn add_pipelined(
        &self,
        con: &mut dyn ConnectionLike,
        day: NaiveDate,
        members: &[i64],
    ) -> Result<Vec<Visit>> {
        self.pipelined_calls(day, members)?
            .query::<Vec<i64>>(con)?
            .into_iter()
            .map(Self::visit)
            .collect()
    }

    /// Async twin of [`VisitCounter::add_pipelined`].
    pub async fn add_pipelined_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        day: NaiveDate,
        members: &[i64],
    ) -> Result<Vec<Visit>> {
        let pipe = self.pipelined_calls(day, members)?;
        pipe.query_async::<Vec<i64>, C>(con)
            .await?
            .into_iter()
            .map(Self::visit)
            .collect()
    }

    fn batch_call(&self, day: NaiveDate, members: &[i64]) -> Result<BatchCall> {
        // Dedupe (first occurrence wins) and group by shard.
        let mut seen: HashSet<i64> = HashSet::with_capacity(members.len());
        let mut groups: Vec<(u32, Vec<i64>)> = Vec::new();
        let mut group_of: HashMap<u32, usize> = HashMap::new();
        let mut slot_of_member: Vec<Option<(usize, usize)>> = Vec::with_capacity(members.len());
        for &m in members {
            if !seen.insert(m) {
                slot_of_member.push(None);
                continue;
            }
            let shard = shard_of(m, self.shards);
            let g = *group_of.entry(shard).or_insert_with(|| {
                groups.push((shard, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(m);
            slot_of_member.push(Some((g, groups[g].1.len() - 1)));
        }
        // Position of each member's flag in the reply (after the count).
        let mut offset = Vec::with_capacity(groups.len());
        let mut at = 1;
        for (_, ms) in &groups {
            offset.push(at);
            at += ms.len();
        }
        let positions = slot_of_member
            .into_iter()
            .map(|s| s.map(|(g, i)| offset[g] + i))
            .collect();
        let tag = self.day_tag(day);
        let shard_keys: Vec<String> = groups.iter().map(|(s, _)| format!("{tag}:{s}")).collect();
        let mut args = Vec::with_capacity(members.len() + groups.len());
        for (_, ms) in &groups {
            args.push(ms.len() as i64);
            args.extend_from_slice(ms);
        }
        let call = scripts::visits::add_batch(
            &format!("{tag}:count"),
            &shard_keys,
            self.expire_arg(day)?,
            &args,
        )?;
        Ok((call, positions))
    }

    fn batch_result(reply: Vec<i64>, positions: Vec<Option<usize>>) -> Result<BatchVisits> {
        let count = *reply.first().ok_or_else(Error::short_reply)?;
        let new = positions
            .into_iter()
            .map(|p| match p {
                Some(i) => reply.get(i).map(|&f| f == 1).ok_or_else(Error::short_reply),
                None => Ok(false),
            })
            .collect::<Result<Vec<bool>>>()?;
        Ok(BatchVisits {
            count: count_of(count),
            new,
        })
    }

    /// Counts many visits of one day in one script call. Keep batches to a
    /// few thousand members: the server runs nothing else meanwhile.
    pub fn add_batch(
        &self,
        con: &mut dyn ConnectionLike,
        day: NaiveDate,
        members: &[i64],
    ) -> Result<BatchVisits> {
        if members.is_empty() {
            self.expire_arg(day)?;
            return Ok(BatchVisits {
                count: self.count(con, day)?,
                new: Vec::new(),
            });
        }
        let (call, positions) = self.batch_call(day, members)?;
        Self::batch_result(call.invoke(con)?, positions)
    }

    /// Async twin of [`VisitCounter::add_batch`].
    pub async fn add_batch_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        day: NaiveDate,
        members: &[i64],
    ) -> Result<BatchVisits> {
        if members.is_empty() {
            self.expire_arg(day)?;
            let n: Option<i64> = self.count_cmd(day).query_async(con).await?;
            return Ok(BatchVisits {
                count: count_of(n.unwrap_or(0)),
                new: Vec::new(),
            });
        }
        let (call, positions) = self.batch_call(day, members)?;
        Self::batch_result(call.invoke_async(con).await?, positions)
    }

    /// The command that reads the day's counter (`GET`; nil for a day
    /// without visits), shared by the sync and async reads.
    fn count_cmd(&self, day: NaiveDate) -> redis::Cmd {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.counter_key(day));
        cmd
    }

    /// The day's distinct count (0 for a day without visits).
    pub fn count(&self, con: &mut dyn ConnectionLike, day: NaiveDate) -> Result<u64> {
        let n: Option<i64> = self.count_cmd(day).query(con)?;
        Ok(count_of(n.unwrap_or(0)))
    }

    /// Whether `member` was counted on `day` (read-only script, `EVALSHA_RO`).
    pub fn contains(
        &self,
        con: &mut dyn ConnectionLike,
        day: NaiveDate,
        member: i64,
    ) -> Result<bool> {
        let reply = scripts::visits::contains(
            &self.counter_key(day),
            &self.member_shard_key(day, member),
            member,
        )?
        .invoke(con)?;
        Ok(reply.first() == Some(&1))
    }

    /// `SCARD` of every shard of `day`, by index (one pipeline; one command
    /// at a time on the sync `ClusterConnection`).
    pub fn shard_sizes(&self, con: &mut dyn ConnectionLike, day: NaiveDate) -> Result<Vec<u64>> {
        let mut batch = Batch::new();
        for key in self.shard_keys(day) {
            let mut cmd = redis::cmd("SCARD");
            cmd.arg(&key);
            batch.add(key, cmd);
        }
        batch.query(con, self.topology)
    }

    /// The exact number of distinct members over `days` (duplicates ignored),
    /// unioned client-side shard index by shard index (see the module docs).
    pub fn distinct_over(&self, con: &mut dyn ConnectionLike, days: &[NaiveDate]) -> Result<u64> {
        if days.is_empty() {
            return Err(Error::invalid("days", "must not be empty"));
        }
        let mut days = days.to_vec();
        days.sort();
        days.dedup();
        if days.len() == 1 {
            return self.count(con, days[0]);
        }
        let tags: Vec<String> = days.iter().map(|&d| self.day_tag(d)).collect();
        let mut total = 0u64;
        let mut from = 0;
        while from < self.shards {
            let to = (from + UNION_CHUNK).min(self.shards);
            let mut batch = Batch::new();
            for i in from..to {
                for tag in &tags {
                    let key = format!("{tag}:{i}");
                    let mut cmd = redis::cmd("SMEMBERS");
                    cmd.arg(&key);
                    batch.add(key, cmd);
                }
            }
            let sets: Vec<Vec<i64>> = batch.query(con, self.topology)?;
            for per_index in sets.chunks(days.len()) {
                let union: HashSet<i64> = per_index.iter().flatten().copied().collect();
                total += union.len() as u64;
            }
            from = to;
        }
        Ok(total)
    }

    /// [`VisitCounter::distinct_over`] every day from `from` to `to`
    /// inclusive; a reversed range is an error.
    pub fn distinct_between(
        &self,
        con: &mut dyn ConnectionLike,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<u64> {
        if from > to {
            return Err(Error::invalid(
                "day range",
                format!("reversed: {from} is after {to}"),
            ));
        }
        let days: Vec<NaiveDate> = from.iter_days().take_while(|d| *d <= to).collect();
        if days.len() > 3660 {
            return Err(Error::invalid("day range", "must span at most 3660 days"));
        }
        self.distinct_over(con, &days)
    }
}
