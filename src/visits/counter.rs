//! The counter API: [`VisitCounter`] (built with [`VisitCounterBuilder`])
//! and its operations on one day — add a visit (one, pipelined, or a batch
//! in one script call), the day's count, membership, shard sizes.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use serde::Serialize;

use super::shards::{ShardPlan, shard_of};
use super::{DEFAULT_LATE_WINDOW, DEFAULT_PREFIX, DEFAULT_RETENTION, MAX_SHARDS};
use crate::core::resend::changed;
use crate::core::{Batch, Op, Replies, Retention, setters};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::{self, Prefix};
use crate::scripts;

/// The longest grace after the end of a day.
const MAX_GRACE: Duration = Duration::from_secs(366 * 86_400);

/// The outcome of one visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Visit {
    /// Whether the member had not been counted that day: `None` when it is
    /// not known — the call was sent again after the reply to an earlier
    /// attempt was lost, and that attempt may have counted the member (the
    /// resend then found it counted; a resend that counted it answers
    /// `Some(true)`). The count is right either way.
    pub new: Option<bool>,
    /// The day's distinct count after this visit.
    pub count: u64,
}

/// The outcome of a batch of visits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchVisits {
    /// The day's distinct count after the batch.
    pub count: u64,
    /// Per member, in the order given: counted for the first time by this
    /// batch (a member repeated within the batch is new at most once);
    /// `None` for a member for which it is not known (as [`Visit::new`]:
    /// the batch's call was sent again after its first reply was lost, and
    /// found the member counted).
    pub new: Vec<Option<bool>>,
}

/// A daily unique-visitor counter in the zone `Tz` (`chrono::Utc`,
/// `chrono::FixedOffset`, a `chrono_tz::Tz`...). Cheap to clone; holds no
/// connection.
#[derive(Debug, Clone)]
pub struct VisitCounter<Tz: TimeZone> {
    pub(super) prefix: Prefix,
    pub(super) name: String,
    pub(super) shards: u32,
    pub(super) tz: Tz,
    pub(super) retention: Retention,
    /// How long after a day ends visits stamped on it are still accepted
    /// (`None`: as long as its keys live).
    pub(super) late_window: Option<Duration>,
}

/// Builds a [`VisitCounter`]: setters never fail,
/// [`VisitCounterBuilder::build`] checks.
#[derive(Debug, Clone)]
pub struct VisitCounterBuilder<Tz: TimeZone> {
    name: String,
    tz: Tz,
    shards: u32,
    prefix: Prefix,
    retention: Retention,
    late_window: Option<Duration>,
}

impl<Tz: TimeZone> VisitCounterBuilder<Tz> {
    setters! {
        /// The key prefix (default [`VisitCounter::DEFAULT_PREFIX`]).
        prefix(prefix: Prefix) => prefix;

        /// How long a day's keys live after the day ends: `After(grace)` (whole
        /// seconds, at most 366 days) or `Forever`. The default is
        /// [`VisitCounter::DEFAULT_RETENTION`] (two days: see the module docs).
        retention(retention: Retention) => retention;

        /// How long after a day ends a visit stamped on that day is still
        /// accepted (whole seconds, at most the retention's grace), after which
        /// it is refused ([`ErrorKind::DayEnded`](crate::ErrorKind::DayEnded))
        /// and the day's count is final ([`VisitCounter::final_count`]). The
        /// default is [`VisitCounter::DEFAULT_LATE_WINDOW`] (five minutes: see the module
        /// docs); `None` accepts visits as long as the day's keys live (to
        /// backfill history into a counter kept `Forever`), and no count is
        /// ever final.
        late_window(window: Option<Duration>) => late_window;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<VisitCounter<Tz>> {
        keys::check_name("counter name", &self.name)?;
        if self.shards == 0 || self.shards > MAX_SHARDS {
            return Err(Error::invalid(
                "shards",
                format!("must be from 1 to {MAX_SHARDS}, got {}", self.shards),
            ));
        }
        if let Retention::After(grace) = self.retention
            && (grace.subsec_nanos() != 0 || grace > MAX_GRACE)
        {
            return Err(Error::invalid(
                "retention",
                "must be whole seconds, at most 366 days",
            ));
        }
        if let Some(late) = self.late_window {
            if late.subsec_nanos() != 0 || late > MAX_GRACE {
                return Err(Error::invalid(
                    "late window",
                    "must be whole seconds, at most 366 days",
                ));
            }
            if let Retention::After(grace) = self.retention
                && late > grace
            {
                return Err(Error::invalid(
                    "late window",
                    format!(
                        "{} s is longer than the retention's grace of {} s: late visits would find their day's keys gone",
                        late.as_secs(),
                        grace.as_secs()
                    ),
                ));
            }
        }
        Ok(VisitCounter {
            prefix: self.prefix,
            name: self.name,
            shards: self.shards,
            tz: self.tz,
            retention: self.retention,
            late_window: self.late_window,
        })
    }
}

fn count_of(v: i64) -> u64 {
    v.max(0) as u64
}

/// A `visits.add` reply: `{new, count}` (and whether it is a resend's).
fn visit((reply, resent): (Vec<i64>, bool)) -> Result<Visit> {
    match reply.as_slice() {
        [new, count] => Ok(Visit {
            new: changed(*new == 1, resent),
            count: count_of(*count),
        }),
        _ => Err(Error::short_reply()),
    }
}

/// The arguments of one `visits.add_batch` call: the distinct members grouped
/// by shard, and where each given member's flag is in the reply.
struct BatchPlan {
    /// The shard index of each group, in order.
    shards: Vec<u32>,
    /// Per group: its size, then its members.
    groups: Vec<i64>,
    /// Per member given: the position of its flag in the reply (after the
    /// count), or `None` for a repeat within the batch.
    positions: Vec<Option<usize>>,
}

impl BatchPlan {
    fn new(members: &[i64], shards: u32) -> Self {
        // Dedupe (first occurrence wins) and group by shard.
        let mut seen: HashSet<i64> = HashSet::with_capacity(members.len());
        let mut groups: Vec<(u32, Vec<i64>)> = Vec::new();
        let mut group_of: HashMap<u32, usize> = HashMap::new();
        let mut place: Vec<Option<(usize, usize)>> = Vec::with_capacity(members.len());
        for &m in members {
            if !seen.insert(m) {
                place.push(None);
                continue;
            }
            let shard = shard_of(m, shards);
            let g = *group_of.entry(shard).or_insert_with(|| {
                groups.push((shard, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(m);
            place.push(Some((g, groups[g].1.len() - 1)));
        }
        let mut offset = Vec::with_capacity(groups.len());
        let mut at = 1;
        for (_, ms) in &groups {
            offset.push(at);
            at += ms.len();
        }
        let mut args = Vec::with_capacity(members.len() + groups.len());
        for (_, ms) in &groups {
            args.push(ms.len() as i64);
            args.extend_from_slice(ms);
        }
        Self {
            shards: groups.iter().map(|(s, _)| *s).collect(),
            groups: args,
            positions: place
                .into_iter()
                .map(|p| p.map(|(g, i)| offset[g] + i))
                .collect(),
        }
    }

    /// Decodes the reply `{count, new_1, ..., new_m}`.
    fn result(
        positions: Vec<Option<usize>>,
        (reply, resent): (Vec<i64>, bool),
    ) -> Result<BatchVisits> {
        let count = *reply.first().ok_or_else(Error::short_reply)?;
        let new = positions
            .into_iter()
            .map(|p| match p {
                Some(i) => reply
                    .get(i)
                    .map(|&f| changed(f == 1, resent))
                    .ok_or_else(Error::short_reply),
                None => Ok(Some(false)),
            })
            .collect::<Result<Vec<Option<bool>>>>()?;
        Ok(BatchVisits {
            count: count_of(count),
            new,
        })
    }
}

impl<Tz: TimeZone> VisitCounter<Tz> {
    /// A builder for the counter named `name` with `shards` shard sets per
    /// day, whose days are calendar days in `tz`.
    pub fn builder(name: &str, tz: Tz, shards: u32) -> VisitCounterBuilder<Tz> {
        VisitCounterBuilder {
            name: name.to_string(),
            tz,
            shards,
            prefix: Prefix::new(DEFAULT_PREFIX).expect("the default prefix is valid"),
            retention: DEFAULT_RETENTION,
            late_window: Some(DEFAULT_LATE_WINDOW),
        }
    }

    /// A counter named `name` with `shards` shard sets per day, whose days
    /// are calendar days in `tz`, with the default prefix, retention and
    /// late window.
    pub fn new(name: &str, tz: Tz, shards: u32) -> Result<Self> {
        Self::builder(name, tz, shards).build()
    }

    /// [`VisitCounter::new`] with the shard count planned
    /// ([`ShardPlan::planned_shards`]) from the expected daily
    /// uniques and the server's `set-max-intset-entries`, with the plan (which
    /// says whether the limit came from the server).
    pub fn planned(name: &str, tz: Tz, expected_daily_uniques: u64) -> Op<(Self, ShardPlan)>
    where
        Tz: Send + 'static,
    {
        let name = name.to_string();
        ShardPlan::planned_shards(expected_daily_uniques)
            .try_map(move |plan| Ok((Self::new(&name, tz, plan.shards)?, plan)))
    }

    /// The key prefix.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    /// The counter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Shard sets per day.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// How long a day's keys live after the day ends.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// How long after a day ends visits stamped on it are still accepted
    /// (`None`: as long as its keys live).
    pub fn late_window(&self) -> Option<Duration> {
        self.late_window
    }

    /// The zone whose calendar days the counter counts.
    pub fn time_zone(&self) -> &Tz {
        &self.tz
    }

    /// Counts one visit of `member` on `day` (one script call).
    pub fn add(&self, day: NaiveDate, member: i64) -> Op<Visit> {
        self.day_args(day)
            .map_or_else(Op::fail, |(expire, accept)| {
                Op::script_resent(scripts::visits::add(
                    &self.counter_key(day),
                    &self.member_shard_key(day, member),
                    &self.meta_key(day),
                    expire,
                    accept,
                    member,
                    i64::from(self.shards),
                ))
                .try_map(visit)
            })
    }

    /// Counts a visit at `instant` (on its day in the counter's zone).
    pub fn add_at<Z: TimeZone>(&self, instant: &DateTime<Z>, member: i64) -> Op<Visit> {
        self.add(self.day_of(instant), member)
    }

    /// Counts each member with its own script call, all in one batch (one
    /// round trip: the keys of one day share a slot; each call atomic on its
    /// own). The first refusal (e.g. the day ended) is the error.
    pub fn add_pipelined(&self, day: NaiveDate, members: &[i64]) -> Op<Vec<Visit>> {
        let (expire, accept) = match self.day_args(day) {
            Ok(at) => at,
            Err(e) => return Op::fail(e),
        };
        let tag = self.day_tag(day);
        let counter = format!("{tag}:count");
        let meta = format!("{tag}:meta");
        let mut batch = Batch::with_capacity(members.len());
        for &m in members {
            batch.script(scripts::visits::add(
                &counter,
                &format!("{tag}:{}", shard_of(m, self.shards)),
                &meta,
                expire,
                accept,
                m,
                i64::from(self.shards),
            ));
        }
        Op::send(batch, |mut replies| {
            (0..replies.len())
                .map(|_| {
                    let resent = replies.resent();
                    visit((replies.take()?, resent))
                })
                .collect()
        })
    }

    /// Counts many visits of one day in one script call. Keep batches to a
    /// few thousand members: the server runs nothing else meanwhile. An empty
    /// batch only reads the count.
    pub fn add_batch(&self, day: NaiveDate, members: &[i64]) -> Op<BatchVisits> {
        let (expire, accept) = match self.day_args(day) {
            Ok(at) => at,
            Err(e) => return Op::fail(e),
        };
        if members.is_empty() {
            return self.count(day).map(|count| BatchVisits {
                count,
                new: Vec::new(),
            });
        }
        let plan = BatchPlan::new(members, self.shards);
        let tag = self.day_tag(day);
        let shard_keys: Vec<String> = plan.shards.iter().map(|s| format!("{tag}:{s}")).collect();
        let positions = plan.positions;
        Op::script_resent(scripts::visits::add_batch(
            &format!("{tag}:count"),
            &format!("{tag}:meta"),
            &shard_keys,
            expire,
            accept,
            i64::from(self.shards),
            &plan.groups,
        ))
        .try_map(move |reply| BatchPlan::result(positions, reply))
    }

    /// The day's distinct count (0 for a day without visits).
    pub fn count(&self, day: NaiveDate) -> Op<u64> {
        let key = self.counter_key(day);
        let mut cmd = redis::cmd("GET");
        cmd.arg(&key);
        Op::<Option<i64>>::cmd(key, cmd).map(|n| count_of(n.unwrap_or(0)))
    }

    /// The count of a day that no longer accepts visits: `day`'s count once
    /// its late window is over, read with the server's clock (`TIME`, in
    /// the same pipeline as the `GET`, on the day's node). Before that,
    /// [`ErrorKind::DayOpen`] (visits may still arrive; also for a counter
    /// without a late window); after the day's keys expired,
    /// [`ErrorKind::DayExpired`] (the count is gone: it is not 0).
    pub fn final_count(&self, day: NaiveDate) -> Op<u64> {
        let (expire, accept) = match (self.expire_at(day), self.accept_until(day)) {
            (Ok(e), Ok(a)) => (e, a),
            (Err(e), _) | (_, Err(e)) => return Op::fail(e),
        };
        let key = self.counter_key(day);
        let mut batch = Batch::with_capacity(2);
        batch.add(&key, redis::cmd("TIME"));
        let mut get = redis::cmd("GET");
        get.arg(&key);
        batch.add(&key, get);
        let when = |at: i64| {
            DateTime::<Utc>::from_timestamp(at, 0)
                .map_or_else(|| at.to_string(), |t| t.to_rfc3339())
        };
        Op::send(batch, move |mut replies| {
            let (now, _): (i64, i64) = replies.take()?;
            let count: Option<i64> = replies.take()?;
            match accept {
                None => {
                    return Err(ErrorKind::DayOpen {
                        detail: format!(
                            "{day} accepts visits as long as its keys live (the counter has no late window)"
                        ),
                    }
                    .into());
                }
                Some(at) if now < at => {
                    return Err(ErrorKind::DayOpen {
                        detail: format!(
                            "{day} accepts visits until {} (its end plus the late window)",
                            when(at)
                        ),
                    }
                    .into());
                }
                Some(_) => {}
            }
            if let Some(at) = expire.filter(|&at| now >= at) {
                return Err(ErrorKind::DayExpired {
                    detail: format!(
                        "{day}'s keys expired at {} (its end plus the retention's grace)",
                        when(at)
                    ),
                }
                .into());
            }
            Ok(count_of(count.unwrap_or(0)))
        })
    }

    /// Whether `member` was counted on `day` (read-only script, `EVALSHA_RO`).
    pub fn contains(&self, day: NaiveDate, member: i64) -> Op<bool> {
        Op::script(scripts::visits::contains(
            &self.counter_key(day),
            &self.member_shard_key(day, member),
            member,
        ))
        .map(|reply| reply.first() == Some(&1))
    }

    /// `SCARD` of every shard of `day`, by index (one batch).
    pub fn shard_sizes(&self, day: NaiveDate) -> Op<Vec<u64>> {
        let mut batch = Batch::with_capacity(self.shards as usize);
        for key in self.shard_keys(day) {
            let mut cmd = redis::cmd("SCARD");
            cmd.arg(&key);
            batch.add(key, cmd);
        }
        Op::send(batch, Replies::all)
    }
}
