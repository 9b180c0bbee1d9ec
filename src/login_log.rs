//! The seed's per-user monthly login log, with its seven queries
//! (`lua/login_log/`).
//!
//! # Keys
//!
//! * `<prefix>_<YYYY-MM>_<type>_<uid>` — exactly the seed's layout (default
//!   prefix `loginLog`, e.g. `loginLog_2017-10_client_1001`), so existing data
//!   reads as is: one bitmap per user and month, bit `n` set when the user
//!   logged in on day `n` (bit 0 unused, as in the seed's
//!   `SETBIT loginLog_2017-10_client_1001 25 1`).
//! * `{<prefix>:<YYYY-MM>}:<YYYYMMDD>:<type>` — the day's index of users of a
//!   type, the sign-in seed's layout (`SETBIT <date> <uid> 1`): bit `uid` set
//!   when that user logged in that day. Queries (6) and (7) read these instead
//!   of `KEYS loginLog_*`.
//! * `{<prefix>:<YYYY-MM>}:types` — the set of user types seen that month.
//!
//! # What runs where
//!
//! The seed's log keys have no hash tag, so on Redis Cluster a user's log and
//! the day's index are in different slots. With [`Topology::Standalone`] (the
//! default; a single server, where slots do not matter) a login is one atomic
//! script (`login_log.record`) that writes the log, the index and the types
//! set. With [`Topology::Cluster`] (pass it, or [`Topology::detect`], to
//! [`LoginLog::topology`]) it is the same script when the keys happen to share
//! a slot, and otherwise two single-slot scripts, each sent to its own slot:
//! `login_log.mark` (the log) then `login_log.index` (index and types, which
//! share the month's tag). Both are idempotent: if the second one is lost,
//! recording the login again repairs the index.
//!
//! Reads touch one key per command (queries 2–5) or the keys of one month's
//! tag per script call (queries 6–7: `signin.combine` with `OR` ORs a month's
//! day indexes into a temporary key of that tag, returns it and deletes it; the
//! client ORs the months and decodes the set bits). A query over several
//! months sends its commands together: one pipeline on one server, one
//! pipeline per hash slot with [`Topology::Cluster`] (via [`Batch`] and
//! [`ScriptPipeline::topology`]; one command at a time on redis-rs's sync
//! `ClusterConnection`, which cannot pipeline).
//!
//! # The offset trap and expiry
//!
//! A uid is a bit offset in the day index: `SETBIT key 4000000000 1` makes
//! Redis allocate ~500 MB. Uids above the configured maximum (default
//! 10,000,000: at most 1.25 MB per day index) are refused with
//! [`ErrorKind::UidOutOfRange`] before anything is written; the scripts check it
//! again for callers in other languages. Nothing expires by default: the seed
//! explains that a TTL shorter than the sync interval loses data.
//! [`Retention::Days`] sets `EXPIREAT` to the end of the key's period (month
//! for a log, day for an index, 00:00 UTC) plus that many days.

use std::collections::BTreeSet;

use chrono::{Datelike, NaiveDate};
use redis::ConnectionLike;

use crate::error::{Error, ErrorKind, Result};
use crate::fanout::Batch;
use crate::script::ScriptPipeline;
use crate::scripts;

/// The seed's key prefix.
pub const DEFAULT_PREFIX: &str = "loginLog";

/// The default maximum user id (a day index is at most 1.25 MB).
pub const DEFAULT_MAX_UID: u64 = 10_000_000;

/// The largest bit offset Redis accepts (2^32 - 1; the `max_uid` range of
/// `lua/login_log/record.lua`'s header).
pub const MAX_OFFSET: u64 = scripts::login_log::RECORD_MAX_UID_MAX as u64;

/// The longest day range a query accepts.
pub const MAX_RANGE_DAYS: i64 = 3660;

/// Where the scripts run, which decides how a login is written (on one
/// server a login is one atomic script; on Redis Cluster it is one script
/// when its keys share a slot, else two idempotent single-slot scripts) and
/// how multi-month queries are batched (one pipeline per slot on a cluster).
pub use crate::fanout::Topology;

/// How long the log and index keys live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retention {
    /// No TTL (the default).
    #[default]
    Keep,
    /// Expire this many days after the end of the key's period (00:00 UTC).
    Days(u32),
}

/// Checks a prefix that starts key names: not empty, no braces or spaces.
pub(crate) fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() {
        return Err(Error::invalid("prefix", "must not be empty"));
    }
    if prefix.contains(['{', '}']) || prefix.chars().any(char::is_whitespace) {
        return Err(Error::invalid(
            "prefix",
            format!("{prefix:?} must not contain braces or whitespace"),
        ));
    }
    Ok(())
}

/// Checks a day range: `from <= to`, at most [`MAX_RANGE_DAYS`] days.
pub(crate) fn check_range(from: NaiveDate, to: NaiveDate) -> Result<()> {
    if from > to {
        return Err(Error::invalid(
            "day range",
            format!("reversed: {from} is after {to}"),
        ));
    }
    if (to - from).num_days() >= MAX_RANGE_DAYS {
        return Err(Error::invalid(
            "day range",
            format!("must span at most {MAX_RANGE_DAYS} days"),
        ));
    }
    Ok(())
}

/// The refusal of a uid above `max`.
pub(crate) fn uid_error(uid: u64, max: u64) -> Error {
    Error::from(ErrorKind::UidOutOfRange {
        detail: format!("uid {uid} is above the configured maximum {max}"),
    })
}

/// Refuses a uid above `max` (before anything is written).
pub(crate) fn check_uid(uid: u64, max: u64) -> Result<()> {
    if uid > max {
        return Err(uid_error(uid, max));
    }
    Ok(())
}

/// The `EXPIREAT` (unix seconds) of a key kept `days` days after its period
/// ends at 00:00 UTC of `period_end`. Refuses an instant at or before the
/// epoch: the scripts read 0 as "no TTL" and Redis deletes a key whose
/// `EXPIREAT` is negative.
pub(crate) fn expire_at(period_end: NaiveDate, days: u32) -> Result<i64> {
    let at = unix_midnight(period_end) + days as i64 * 86_400;
    if at <= 0 {
        return Err(Error::invalid(
            "day",
            format!("a period ending {period_end} kept {days} days expires before 1970"),
        ));
    }
    Ok(at)
}

/// Checks a configured maximum uid.
pub(crate) fn check_max_uid(max: u64) -> Result<()> {
    if max > MAX_OFFSET {
        return Err(Error::invalid(
            "max uid",
            format!("{max} is above the largest bit offset {MAX_OFFSET}"),
        ));
    }
    Ok(())
}

/// The user ids whose bits are set in `bitmap` (bit 0 is the most
/// significant bit of byte 0, as in `SETBIT`), ascending.
pub fn decode_bits(bitmap: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    for (i, &byte) in bitmap.iter().enumerate() {
        if byte == 0 {
            continue;
        }
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                out.push(i as u64 * 8 + bit);
            }
        }
    }
    out
}

/// ORs `src` into `acc`.
pub(crate) fn or_into(acc: &mut Vec<u8>, src: &[u8]) {
    if acc.len() < src.len() {
        acc.resize(src.len(), 0);
    }
    for (a, s) in acc.iter_mut().zip(src) {
        *a |= s;
    }
}

/// The calendar months of a range, each with its first and last day in the
/// range.
fn months(from: NaiveDate, to: NaiveDate) -> Vec<(NaiveDate, NaiveDate)> {
    let mut out = Vec::new();
    let mut start = from;
    while start <= to {
        let next_month = first_of_next_month(start);
        let end = next_month
            .pred_opt()
            .expect("a month has a last day")
            .min(to);
        out.push((start, end));
        start = next_month;
    }
    out
}

fn first_of_next_month(d: NaiveDate) -> NaiveDate {
    let (y, m) = if d.month() == 12 {
        (d.year() + 1, 1)
    } else {
        (d.year(), d.month() + 1)
    };
    NaiveDate::from_ymd_opt(y, m, 1).expect("the first of a month exists")
}

fn unix_midnight(d: NaiveDate) -> i64 {
    d.and_time(chrono::NaiveTime::MIN).and_utc().timestamp()
}

/// The per-user monthly login log with its index. Cheap to clone; holds no
/// connection.
#[derive(Debug, Clone)]
pub struct LoginLog {
    prefix: String,
    max_uid: u64,
    topology: Topology,
    retention: Retention,
}

impl Default for LoginLog {
    fn default() -> Self {
        Self::new()
    }
}

impl LoginLog {
    /// The seed's layout (`loginLog_...`), maximum uid 10,000,000, a single
    /// server, no expiry.
    pub fn new() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_string(),
            max_uid: DEFAULT_MAX_UID,
            topology: Topology::Standalone,
            retention: Retention::Keep,
        }
    }

    /// With another key prefix.
    pub fn with_prefix(prefix: &str) -> Result<Self> {
        check_prefix(prefix)?;
        Ok(Self {
            prefix: prefix.to_string(),
            ..Self::new()
        })
    }

    /// The largest uid accepted (at most 4,294,967,295).
    pub fn max_uid(mut self, max_uid: u64) -> Result<Self> {
        check_max_uid(max_uid)?;
        self.max_uid = max_uid;
        Ok(self)
    }

    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn check_type(&self, user_type: &str) -> Result<()> {
        if user_type.is_empty()
            || !user_type
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(Error::invalid(
                "user type",
                format!("{user_type:?} must be non-empty ASCII letters, digits or '-'"),
            ));
        }
        Ok(())
    }

    /// The seed's key of a user's log for the month of `day`:
    /// `<prefix>_<YYYY-MM>_<type>_<uid>`.
    pub fn log_key(&self, user_type: &str, uid: u64, day: NaiveDate) -> String {
        format!(
            "{}_{}_{}_{}",
            self.prefix,
            day.format("%Y-%m"),
            user_type,
            uid
        )
    }

    fn month_tag(&self, day: NaiveDate) -> String {
        crate::keys::tagged("", &format!("{}:{}", self.prefix, day.format("%Y-%m")))
    }

    /// The day's index of users of `user_type`.
    pub fn index_key(&self, user_type: &str, day: NaiveDate) -> String {
        format!(
            "{}:{}:{}",
            self.month_tag(day),
            day.format("%Y%m%d"),
            user_type
        )
    }

    /// The set of user types seen in the month of `day`.
    pub fn types_key(&self, day: NaiveDate) -> String {
        format!("{}:types", self.month_tag(day))
    }

    /// The `EXPIREAT`s of the log and the index of `day` (0: no TTL).
    fn expiries(&self, day: NaiveDate) -> Result<(i64, i64)> {
        match self.retention {
            Retention::Keep => Ok((0, 0)),
            Retention::Days(n) => Ok((
                expire_at(first_of_next_month(day), n)?,
                expire_at(day.succ_opt().unwrap_or(day), n)?,
            )),
        }
    }

    /// (1) Records a login of user `uid` of `user_type` on `day`; true when
    /// it is the user's first login recorded that day.
    pub fn record(
        &self,
        con: &mut dyn ConnectionLike,
        user_type: &str,
        uid: u64,
        day: NaiveDate,
    ) -> Result<bool> {
        self.check_type(user_type)?;
        check_uid(uid, self.max_uid)?;
        let (log_exp, index_exp) = self.expiries(day)?;
        let log = self.log_key(user_type, uid, day);
        let index = self.index_key(user_type, day);
        let types = self.types_key(day);
        let one_slot = crate::keys::cluster_slot(log.as_bytes())
            == crate::keys::cluster_slot(index.as_bytes());
        if self.topology == Topology::Standalone || one_slot {
            let first = scripts::login_log::record(
                &log,
                &index,
                &types,
                day.day() as i64,
                uid as i64,
                self.max_uid as i64,
                user_type,
                log_exp,
                index_exp,
            )?
            .invoke(con)?;
            return Ok(first == 1);
        }
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        pipe.push(scripts::login_log::mark(&log, day.day() as i64, log_exp)?);
        pipe.push(scripts::login_log::index(
            &index,
            &types,
            uid as i64,
            self.max_uid as i64,
            user_type,
            index_exp,
        )?);
        let replies: Vec<i64> = pipe.query(con)?;
        Ok(replies.first() == Some(&1))
    }

    /// (2) Whether the user logged in on `day`.
    pub fn logged_in_on(
        &self,
        con: &mut dyn ConnectionLike,
        user_type: &str,
        uid: u64,
        day: NaiveDate,
    ) -> Result<bool> {
        self.check_type(user_type)?;
        let bit: i64 = redis::cmd("GETBIT")
            .arg(self.log_key(user_type, uid, day))
            .arg(day.day())
            .query(con)?;
        Ok(bit == 1)
    }

    /// (3) Whether the user logged in during the month `year`-`month`.
    pub fn logged_in_in_month(
        &self,
        con: &mut dyn ConnectionLike,
        user_type: &str,
        uid: u64,
        year: i32,
        month: u32,
    ) -> Result<bool> {
        Ok(self.days_in_month(con, user_type, uid, year, month)? > 0)
    }

    /// The number of days the user logged in during `year`-`month` (the
    /// seed's `BITCOUNT` of the log).
    pub fn days_in_month(
        &self,
        con: &mut dyn ConnectionLike,
        user_type: &str,
        uid: u64,
        year: i32,
        month: u32,
    ) -> Result<u32> {
        self.check_type(user_type)?;
        let first = NaiveDate::from_ymd_opt(year, month, 1).ok_or_else(|| {
            Error::invalid("month", format!("{year}-{month:02} is not a valid month"))
        })?;
        let n: i64 = redis::cmd("BITCOUNT")
            .arg(self.log_key(user_type, uid, first))
            .query(con)?;
        Ok(n as u32)
    }

    /// (4) Whether the user logged in on any day from `from` to `to`
    /// inclusive (`BITCOUNT ... BIT` per month, one pipeline; one per slot on a cluster).
    pub fn logged_in_between(
        &self,
        con: &mut dyn ConnectionLike,
        user_type: &str,
        uid: u64,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<bool> {
        self.check_type(user_type)?;
        check_range(from, to)?;
        let mut batch = Batch::new();
        for (a, b) in months(from, to) {
            let key = self.log_key(user_type, uid, a);
            let mut cmd = redis::cmd("BITCOUNT");
            cmd.arg(&key).arg(a.day()).arg(b.day()).arg("BIT");
            batch.add(key, cmd);
        }
        let counts: Vec<i64> = batch.query(con, self.topology)?;
        Ok(counts.iter().any(|&n| n > 0))
    }

    /// (5) The days from `from` to `to` inclusive on which the user logged
    /// in, ascending; never a day outside the range (`login_log.days`, one
    /// read-only call per month, one pipeline; one per slot on a cluster).
    pub fn login_days(
        &self,
        con: &mut dyn ConnectionLike,
        user_type: &str,
        uid: u64,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<NaiveDate>> {
        self.check_type(user_type)?;
        check_range(from, to)?;
        let spans = months(from, to);
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        for (a, b) in &spans {
            pipe.push(scripts::login_log::days(
                &self.log_key(user_type, uid, *a),
                a.day() as i64,
                b.day() as i64,
            )?);
        }
        let replies: Vec<Vec<i64>> = pipe.query(con)?;
        let mut out = Vec::new();
        for ((a, b), days) in spans.iter().zip(replies) {
            for d in days {
                let date = a.with_day(d as u32).ok_or_else(Error::short_reply)?;
                if date < *a || date > *b {
                    return Err(Error::short_reply());
                }
                out.push(date);
            }
        }
        Ok(out)
    }

    /// The OR of the day indexes of `user_type` from `from` to `to`, one
    /// `signin.combine` (`OR`) call per month in one pipeline (one per slot on
    /// a cluster).
    fn union_of(
        &self,
        con: &mut dyn ConnectionLike,
        user_types: &[String],
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<Vec<u8>>> {
        let spans = months(from, to);
        let mut pipe = ScriptPipeline::new();
        pipe.topology(self.topology);
        for t in user_types {
            for (a, b) in &spans {
                let keys: Vec<String> = a
                    .iter_days()
                    .take_while(|d| d <= b)
                    .map(|d| self.index_key(t, d))
                    .collect();
                let tmp = crate::keys::tmp_key(&self.month_tag(*a));
                pipe.push(scripts::signin::combine(&tmp, &keys, "OR")?);
            }
        }
        let replies: Vec<Option<Vec<u8>>> = pipe.query(con)?;
        Ok(replies
            .chunks(spans.len().max(1))
            .map(|per_type| {
                let mut acc = Vec::new();
                for bitmap in per_type.iter().flatten() {
                    or_into(&mut acc, bitmap);
                }
                acc
            })
            .collect())
    }

    /// (6) The users of `user_type` who logged in on any day from `from` to
    /// `to` inclusive, ascending (from the day indexes; no `KEYS`/`SCAN`).
    pub fn active_users(
        &self,
        con: &mut dyn ConnectionLike,
        user_type: &str,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<u64>> {
        self.check_type(user_type)?;
        check_range(from, to)?;
        let unions = self.union_of(con, &[user_type.to_string()], from, to)?;
        Ok(unions.first().map(|b| decode_bits(b)).unwrap_or_default())
    }

    /// The user types recorded in any month of the range.
    pub fn types_between(
        &self,
        con: &mut dyn ConnectionLike,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<String>> {
        check_range(from, to)?;
        let mut batch = Batch::new();
        for (a, _) in months(from, to) {
            let key = self.types_key(a);
            let mut cmd = redis::cmd("SMEMBERS");
            cmd.arg(&key);
            batch.add(key, cmd);
        }
        let sets: Vec<Vec<String>> = batch.query(con, self.topology)?;
        let all: BTreeSet<String> = sets.into_iter().flatten().collect();
        Ok(all.into_iter().collect())
    }

    /// (7) Every user, of every type, who logged in on any day from `from`
    /// to `to` inclusive: `(type, uid)` sorted by type then uid.
    pub fn all_active_users(
        &self,
        con: &mut dyn ConnectionLike,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<(String, u64)>> {
        check_range(from, to)?;
        let types = self.types_between(con, from, to)?;
        if types.is_empty() {
            return Ok(Vec::new());
        }
        let unions = self.union_of(con, &types, from, to)?;
        Ok(types
            .iter()
            .zip(unions)
            .flat_map(|(t, bitmap)| {
                decode_bits(&bitmap)
                    .into_iter()
                    .map(move |u| (t.clone(), u))
            })
            .collect())
    }
}
