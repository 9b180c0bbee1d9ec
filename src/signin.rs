//! Daily sign-in bitmaps (`lua/signin/`): the sign-in seed's
//! `SETBIT <date> <uid> 1`, `GETBIT`, `BITCOUNT`, with unions and
//! intersections over day ranges and per-user streaks.
//!
//! # Keys
//!
//! `<prefix>:<YYYYMMDD>`, one bitmap per day, bit `uid` set when that user
//! signed in (the seed's keys are bare dates; a prefix keeps them apart from
//! other data). The prefix may carry a hash tag (`signin:{app}`): then every
//! day shares one cluster slot and range unions/intersections run in one
//! script (`signin.combine`: `BITOP` into a temporary key that the script
//! deletes; `signin.count` does the same and returns only its `BITCOUNT`, so
//! the counts do not download the bitmap). Without a tag, days are spread over the cluster; with
//! [`Topology::Cluster`] (pass it, or [`Topology::detect`], to
//! [`SignIn::topology`]) the range operations then fetch the day bitmaps with
//! `GET`s, one pipeline per hash slot, and combine them client-side. With
//! [`Topology::Standalone`] (the default) they always run in the script.
//! [`SignIn::days_signed_in`] and [`SignIn::streak`] send one `GETBIT` per
//! day the same way (one pipeline on one server). On redis-rs's sync
//! `ClusterConnection`, which cannot pipeline, the commands go one at a time.
//!
//! # The offset trap and expiry
//!
//! `SETBIT key 4000000000 1` allocates ~500 MB: uids above the configured
//! maximum (default 10,000,000) are refused with [`ErrorKind::UidOutOfRange`](crate::ErrorKind::UidOutOfRange)
//! before anything is written (and again inside `signin.mark`). No TTL by
//! default; [`SignIn::retention_days`] expires a day's bitmap that many days
//! after its end (00:00 UTC).

use chrono::NaiveDate;
use redis::ConnectionLike;

use crate::error::{Error, Result};
use crate::fanout::Batch;
/// The default maximum user id (a day bitmap is at most 1.25 MB).
pub use crate::login_log::DEFAULT_MAX_UID;
pub use crate::login_log::Topology;
use crate::login_log::{check_max_uid, check_range, check_uid, decode_bits, expire_at, or_into};
use crate::scripts;

/// A user's consecutive-day sign-in runs within a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Streak {
    /// The longest run of consecutive days in the range.
    pub longest: u32,
    /// The last day of the (earliest) longest run, `None` when there is none.
    pub longest_ends: Option<NaiveDate>,
    /// The run that ends on the range's last day (0 when the user did not
    /// sign in that day).
    pub current: u32,
}

/// How range bitmaps are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Or,
    And,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Or => "OR",
            Op::And => "AND",
        }
    }
}

/// Checks a prefix: not empty, no whitespace, braces only as one `{tag}`.
fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() {
        return Err(Error::invalid("prefix", "must not be empty"));
    }
    if prefix.chars().any(char::is_whitespace) {
        return Err(Error::invalid("prefix", "must not contain whitespace"));
    }
    let opens = prefix.matches('{').count();
    let closes = prefix.matches('}').count();
    let well_formed = match (prefix.find('{'), prefix.find('}')) {
        (None, None) => true,
        (Some(o), Some(c)) => opens == 1 && closes == 1 && c > o + 1,
        _ => false,
    };
    if !well_formed {
        return Err(Error::invalid(
            "prefix",
            format!("{prefix:?} may hold at most one non-empty {{hash tag}}"),
        ));
    }
    Ok(())
}

/// Daily sign-in bitmaps. Cheap to clone; holds no connection.
#[derive(Debug, Clone)]
pub struct SignIn {
    prefix: String,
    max_uid: u64,
    retention_days: Option<u32>,
    topology: Topology,
}

impl SignIn {
    /// Bitmaps `<prefix>:<YYYYMMDD>`, maximum uid 10,000,000, no expiry.
    pub fn new(prefix: &str) -> Result<Self> {
        check_prefix(prefix)?;
        Ok(Self {
            prefix: prefix.to_string(),
            max_uid: DEFAULT_MAX_UID,
            retention_days: None,
            topology: Topology::Standalone,
        })
    }

    /// The largest uid accepted (at most 4,294,967,295).
    pub fn max_uid(mut self, max_uid: u64) -> Result<Self> {
        check_max_uid(max_uid)?;
        self.max_uid = max_uid;
        Ok(self)
    }

    /// Expire each day's bitmap `days` days after the day ends (00:00 UTC).
    pub fn retention_days(mut self, days: u32) -> Self {
        self.retention_days = Some(days);
        self
    }

    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    /// The day's bitmap key, `<prefix>:<YYYYMMDD>`.
    pub fn key(&self, day: NaiveDate) -> String {
        format!("{}:{}", self.prefix, day.format("%Y%m%d"))
    }

    fn expire_at(&self, day: NaiveDate) -> Result<i64> {
        let Some(days) = self.retention_days else {
            return Ok(0);
        };
        let end = day
            .succ_opt()
            .ok_or_else(|| Error::invalid("day", format!("{day} has no next day")))?;
        expire_at(end, days)
    }

    /// Marks `uid` signed in on `day`; true when it is the first sign-in of
    /// that user that day.
    pub fn sign_in(&self, con: &mut dyn ConnectionLike, uid: u64, day: NaiveDate) -> Result<bool> {
        check_uid(uid, self.max_uid)?;
        let expire = self.expire_at(day)?;
        let first = scripts::signin::mark(&self.key(day), uid as i64, self.max_uid as i64, expire)?
            .invoke(con)?;
        Ok(first == 1)
    }

    /// Whether `uid` signed in on `day` (`GETBIT`).
    pub fn signed_in(
        &self,
        con: &mut dyn ConnectionLike,
        uid: u64,
        day: NaiveDate,
    ) -> Result<bool> {
        if uid > self.max_uid {
            return Ok(false);
        }
        let bit: i64 = redis::cmd("GETBIT")
            .arg(self.key(day))
            .arg(uid)
            .query(con)?;
        Ok(bit == 1)
    }

    /// How many users signed in on `day` (`BITCOUNT`).
    pub fn count(&self, con: &mut dyn ConnectionLike, day: NaiveDate) -> Result<u64> {
        let n: i64 = redis::cmd("BITCOUNT").arg(self.key(day)).query(con)?;
        Ok(n.max(0) as u64)
    }

    fn day_keys(&self, from: NaiveDate, to: NaiveDate) -> Vec<String> {
        from.iter_days()
            .take_while(|d| *d <= to)
            .map(|d| self.key(d))
            .collect()
    }

    /// The temporary key for the range script, `None` when the range must
    /// be combined client-side (a cluster and days in several slots).
    fn script_tmp(&self, days: &[String]) -> Option<String> {
        let tmp = crate::keys::tmp_key(&self.prefix);
        // Slots matter only on a cluster: there the script runs when every
        // day shares the temporary key's slot (a tagged prefix).
        if self.topology == Topology::Standalone {
            return Some(tmp);
        }
        let slot = crate::keys::cluster_slot(tmp.as_bytes());
        days.iter()
            .all(|k| crate::keys::cluster_slot(k.as_bytes()) == slot)
            .then_some(tmp)
    }

    fn combine(
        &self,
        con: &mut dyn ConnectionLike,
        op: Op,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<u8>> {
        check_range(from, to)?;
        let days = self.day_keys(from, to);
        if let Some(tmp) = self.script_tmp(&days) {
            let reply = scripts::signin::combine(&tmp, &days, op.name())?.invoke(con)?;
            return Ok(reply.unwrap_or_default());
        }
        self.combine_client_side(con, op, &days)
    }

    /// The number of users in the combined range: `BITCOUNT` inside the
    /// script (only the count crosses the network), or counted client-side
    /// when the range is combined client-side.
    fn count_range(
        &self,
        con: &mut dyn ConnectionLike,
        op: Op,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<u64> {
        check_range(from, to)?;
        let days = self.day_keys(from, to);
        if let Some(tmp) = self.script_tmp(&days) {
            let n = scripts::signin::count(&tmp, &days, op.name())?.invoke(con)?;
            return Ok(n.max(0) as u64);
        }
        let b = self.combine_client_side(con, op, &days)?;
        Ok(b.iter().map(|x| x.count_ones() as u64).sum())
    }

    /// Cluster without a shared tag: fetch the day bitmaps (one pipeline per
    /// slot) and combine them client-side.
    fn combine_client_side(
        &self,
        con: &mut dyn ConnectionLike,
        op: Op,
        days: &[String],
    ) -> Result<Vec<u8>> {
        let mut batch = Batch::new();
        for k in days {
            let mut cmd = redis::cmd("GET");
            cmd.arg(k);
            batch.add(k, cmd);
        }
        let bitmaps: Vec<Option<Vec<u8>>> = batch.query(con, self.topology)?;
        let mut acc: Vec<u8> = Vec::new();
        match op {
            Op::Or => {
                for b in bitmaps.iter().flatten() {
                    or_into(&mut acc, b);
                }
            }
            Op::And => {
                let mut iter = bitmaps.into_iter();
                acc = iter.next().flatten().unwrap_or_default();
                for b in iter {
                    let b = b.unwrap_or_default();
                    acc.truncate(b.len());
                    for (a, x) in acc.iter_mut().zip(&b) {
                        *a &= x;
                    }
                }
            }
        }
        Ok(acc)
    }

    /// Users who signed in on at least one day from `from` to `to`
    /// inclusive, ascending.
    pub fn active_any(
        &self,
        con: &mut dyn ConnectionLike,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<u64>> {
        Ok(decode_bits(&self.combine(con, Op::Or, from, to)?))
    }

    /// Users who signed in on every day from `from` to `to` inclusive,
    /// ascending.
    pub fn active_every(
        &self,
        con: &mut dyn ConnectionLike,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<u64>> {
        Ok(decode_bits(&self.combine(con, Op::And, from, to)?))
    }

    /// How many users signed in on at least one day of the range.
    pub fn count_any(
        &self,
        con: &mut dyn ConnectionLike,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<u64> {
        self.count_range(con, Op::Or, from, to)
    }

    /// How many users signed in on every day of the range.
    pub fn count_every(
        &self,
        con: &mut dyn ConnectionLike,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<u64> {
        self.count_range(con, Op::And, from, to)
    }

    /// The days of the range on which `uid` signed in (pipelined `GETBIT`s,
    /// one pipeline per slot with [`Topology::Cluster`]).
    pub fn days_signed_in(
        &self,
        con: &mut dyn ConnectionLike,
        uid: u64,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<NaiveDate>> {
        check_range(from, to)?;
        check_uid(uid, self.max_uid)?;
        let days: Vec<NaiveDate> = from.iter_days().take_while(|d| *d <= to).collect();
        let mut batch = Batch::new();
        for d in &days {
            let key = self.key(*d);
            let mut cmd = redis::cmd("GETBIT");
            cmd.arg(&key).arg(uid);
            batch.add(key, cmd);
        }
        let bits: Vec<i64> = batch.query(con, self.topology)?;
        Ok(days
            .into_iter()
            .zip(bits)
            .filter(|(_, b)| *b == 1)
            .map(|(d, _)| d)
            .collect())
    }

    /// `uid`'s consecutive-day sign-in runs from `from` to `to` inclusive.
    pub fn streak(
        &self,
        con: &mut dyn ConnectionLike,
        uid: u64,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Streak> {
        let days = self.days_signed_in(con, uid, from, to)?;
        let mut s = Streak::default();
        let mut run = 0u32;
        let mut prev: Option<NaiveDate> = None;
        for d in days {
            run = match prev {
                Some(p) if p.succ_opt() == Some(d) => run + 1,
                _ => 1,
            };
            if run > s.longest {
                s.longest = run;
                s.longest_ends = Some(d);
            }
            prev = Some(d);
        }
        if prev == Some(to) {
            s.current = run;
        }
        Ok(s)
    }
}
