//! Exact daily unique visitors in sharded integer sets (`lua/visits/`).
//!
//! The PHP unique-visitor recipe (`ShardSet::count`) checks `SISMEMBER`,
//! then sends `SADD`, `INCR`, `TTL`, `EXPIREAT`, `TTL`, `EXPIREAT` in seven
//! round trips: two concurrent first visits of one member are both counted,
//! a crash between `SADD` and `INCR` loses one, and its `shardKey` divides by
//! an undefined variable. Here one script adds the member to its shard set,
//! increments the day's counter only when the member is new and sets
//! `EXPIREAT` from the end of that day in a configurable time zone and the
//! counter's [`Retention`](crate::Retention), so the counter always equals the number of
//! distinct members.
//!
//! Every operation is an [`Op`](crate::Op): run it with `.run(&mut con)` on
//! a [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection). The connection knows whether
//! it talks to a Redis Cluster; the counter does not need to.
//!
//! ```no_run
//! use redis_patterns::chrono::{Days, Utc};
//! use redis_patterns::prelude::*;
//! use redis_patterns::visits::VisitCounter;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let visits = VisitCounter::new("site", Utc, 64)?;
//! let today = visits.day_of(&Utc::now());
//! let v = visits.add(today, 1001).run(&mut con)?;
//! // `new` is None when the call had to be sent again after a lost reply.
//! println!("new visitor: {:?}, distinct today: {}", v.new, v.count);
//! let week = visits
//!     .distinct_between(today - Days::new(6), today)
//!     .run(&mut con)?;
//! println!("distinct over the last 7 days: {week}");
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let visits = VisitCounter::new("site", Utc, 64)?;
//! # let today = visits.day_of(&Utc::now());
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let batch = visits.add_batch(today, &[1, 2, 3]).run_async(&con).await?;
//! let seen = visits.contains(today, 2).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Keys
//!
//! For counter `name` and day `YYYY-MM-DD` (the day in the counter's zone):
//! `<prefix>{<name>:<YYYY-MM-DD>}:<i>` for shard `i` in `0..shards`, and
//! `<prefix>{<name>:<YYYY-MM-DD>}:count` for the counter, and
//! `<prefix>{<name>:<YYYY-MM-DD>}:meta` for the day's layout (its shard
//! count, written by the same script as the day's first member, so every
//! later writer with another shard count is refused with
//! [`ErrorKind::LayoutMismatch`](crate::ErrorKind::LayoutMismatch) and
//! readers find it: [`VisitCounter::stored_shards`]). Every key of one day
//! shares the hash tag `{<name>:<YYYY-MM-DD>}`, so each script call touches
//! one cluster slot. The default prefix is [`VisitCounter::DEFAULT_PREFIX`], `visits:`.
//!
//! # Midnight: retention, late visits and the final count
//!
//! A day ends at the first instant of the next day in the counter's zone
//! (correct on 23- and 25-hour days). Two settings decide what happens
//! around it, both with defaults chosen so that nothing is lost at
//! midnight:
//!
//! * Its keys expire at its end plus the grace of
//!   [`Retention::After`](crate::Retention::After) — by default
//!   [`VisitCounter::DEFAULT_RETENTION`], two days, so yesterday's count stays readable
//!   all of today and tomorrow — or never with
//!   [`Retention::Forever`](crate::Retention::Forever).
//! * A visit stamped on a day (its day is [`VisitCounter::day_of`] its
//!   instant, in the counter's zone) is accepted until the day's end plus
//!   the late window ([`VisitCounterBuilder::late_window`], by default
//!   [`VisitCounter::DEFAULT_LATE_WINDOW`], five minutes), by the server's clock: a visit
//!   stamped 300 ms before midnight that arrives after it still counts.
//!   Later ones are refused ([`ErrorKind::DayEnded`](crate::ErrorKind::DayEnded)),
//!   so the count cannot change any more.
//!
//! [`VisitCounter::final_count`] reads a day's count once its late window
//! is over (and refuses to answer before, or once its keys are gone,
//! instead of answering a count that may still grow, or 0).
//!
//! # Shards and `intset`
//!
//! Members are integers so shards stay `intset`-encoded (4 bytes per
//! member for values in the `i32` range, 8 for larger `i64`). A member goes to
//! shard `crc32(decimal string of the member) % shards` — the decimal ASCII
//! form, as PHP's `crc32($member)` hashes it, not the little-endian bytes. A
//! shard converts to a hashtable (about 15 times larger) once it holds more
//! than `set-max-intset-entries` (default 512) members, so
//! [`ShardPlan::plan_shards`] picks the shard count from the expected daily uniques such
//! that the fullest shard stays below that limit with a wide margin
//! ([`ShardPlan::planned_shards`] reads the limit from the server).
//!
//! String ids: [`VisitCounter::member_from_string_id`] maps them to `i32` values with CRC32
//! (the PHP recipe takes 8 hex digits of an md5 instead; note that those
//! values go up to 2^32-1 and so force the 8-byte `int64` intset encoding).
//! Any such mapping may collide: two ids with one value count once.
//!
//! At a million daily uniques a member costs about 4.8 bytes in intset
//! shards, against about 48 in one plain set. [`VisitCounter::planned`] and
//! [`ShardPlan::planned_shards`] return a [`ShardPlan`] saying whether they had to
//! assume 512 (`limits_source: DefaultBecauseDenied`, when `CONFIG GET`
//! was refused).
//!
//! # Several days
//!
//! Each day has its own hash tag, so on a cluster the days of a range live in
//! different slots and no single script (and no `SUNIONSTORE`) can see them
//! together. [`VisitCounter::distinct_over`] therefore unions client-side,
//! shard index by shard index: the shard function does not depend on the
//! day, so member `m` is in shard `i` on every day and the union's size is
//! the sum over `i` of the size of the union of shard `i` across the days. It
//! fetches the shard sets in chunks: one batch of `SMEMBERS` per chunk (of
//! every day's shards of a few shard indices, about 512 sets), which the
//! connection sends as one pipeline per node; client memory is bounded by
//! one chunk. This requires the same shard count on every day of the range
//! (a counter keeps its shard count; changing it starts a new layout).
//!
//! # Redis Cluster
//!
//! Every script call touches the keys of one day, so it runs on a cluster
//! unchanged, and operations that send many commands
//! ([`VisitCounter::add_pipelined`], [`VisitCounter::shard_sizes`],
//! [`VisitCounter::distinct_over`]) send one batch, which the connection
//! splits into one pipeline per node.

mod contract;
mod counter;
mod day;
mod layout;
mod shards;
mod union;

pub(crate) use contract::contract;
pub use counter::{BatchVisits, Visit, VisitCounter, VisitCounterBuilder};
pub use shards::ShardPlan;

use crate::error::{Error, Result};

/// The value of [`VisitCounter::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "visits:";

/// The value of [`VisitCounter::DEFAULT_RETENTION`].
pub(crate) const DEFAULT_RETENTION: crate::Retention =
    crate::Retention::After(std::time::Duration::from_secs(2 * 86_400));

/// The value of [`VisitCounter::DEFAULT_LATE_WINDOW`].
pub(crate) const DEFAULT_LATE_WINDOW: std::time::Duration = std::time::Duration::from_secs(300);

/// A counter's defaults and its members' text forms, the same in every
/// time zone: on `VisitCounter<Utc>` only so that their names need no zone
/// (`VisitCounter::DEFAULT_PREFIX`, `VisitCounter::parse_member("42")`).
impl VisitCounter<chrono::Utc> {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;

    /// How long a day's keys live after the day ends by default: two days, so
    /// that a day's final count stays readable all through the next day and the
    /// one after (a daily report that runs late, is re-run, or runs in another
    /// zone still finds it), for about three days of keys in memory at a time.
    pub const DEFAULT_RETENTION: crate::Retention = DEFAULT_RETENTION;

    /// How long after a day ends a visit stamped on that day is still accepted
    /// by default: five minutes. It covers a visit stamped just before midnight
    /// that arrives after it — the connection's own retries (up to the
    /// [`RetryPolicy`](crate::core::RetryPolicy)'s 20 s deadline), clock skew
    /// between the application and Redis, a client that queues visits for a few
    /// seconds — while the day's count becomes final
    /// ([`VisitCounter::final_count`]) a few minutes after midnight.
    pub const DEFAULT_LATE_WINDOW: std::time::Duration = DEFAULT_LATE_WINDOW;

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
                format!("`{text}` is not a canonical decimal integer (i64)"),
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
}

/// The value of [`ShardPlan::DEFAULT_MAX_INTSET_ENTRIES`].
pub(crate) const DEFAULT_MAX_INTSET_ENTRIES: u64 = 512;

impl ShardPlan {
    /// Redis's default `set-max-intset-entries`.
    pub const DEFAULT_MAX_INTSET_ENTRIES: u64 = DEFAULT_MAX_INTSET_ENTRIES;
}

/// The most shards a counter may have.
pub(crate) const MAX_SHARDS: u32 = 1 << 20;
