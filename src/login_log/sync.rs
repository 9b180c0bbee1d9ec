//! The sync rule of the PHP login-log recipe: a (weekly) sync exports every
//! user's days of the months its window covers — this month, and last month
//! too before the 8th — records that it exported them, and deletes a month
//! only once it is past retention *and* was exported after it ended:
//! "decide expiry at sync time, not with a TTL" (a TTL shorter than the
//! sync interval deletes logins that were never synced).

use chrono::{Datelike, NaiveDate};
use serde::Serialize;

use super::{ActiveUser, LoginLog};
use crate::bitmap::days::{DayRange, end_of_month};
use crate::bitmap::{checked, decode_bits};
use crate::core::resend::changed_count;
use crate::core::{Batch, Op};
use crate::error::{Error, Result};

/// Before this day of the month, a sync also covers the previous month.
pub(crate) const LAST_MONTH_UNTIL_DAY: u32 = 8;

/// The value of [`LoginLog::MIN_RETENTION_DAYS`](crate::login_log::LoginLog::MIN_RETENTION_DAYS).
pub(crate) const MIN_RETENTION_DAYS: u32 = 32;

impl crate::login_log::LoginLog {
    /// The shortest retention the recipe allows, in days after a month ends
    /// ("must be more than 31").
    pub const MIN_RETENTION_DAYS: u32 = MIN_RETENTION_DAYS;
}

/// The first day of `day`'s month.
pub fn month_of(day: NaiveDate) -> NaiveDate {
    day.with_day(1).expect("every month has a first day")
}

/// The months (as their first days) a sync on `today` covers: this month,
/// and before the 8th also the previous one, oldest first.
pub fn sync_months(today: NaiveDate) -> Vec<NaiveDate> {
    let this = month_of(today);
    let mut out = Vec::new();
    if today.day() < LAST_MONTH_UNTIL_DAY
        && let Some(prev) = this.pred_opt()
    {
        out.push(month_of(prev));
    }
    out.push(this);
    out
}

/// One user's login days in one month, as an export writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MonthLogins {
    /// `YYYY-MM`
    pub month: String,
    /// The user's type (`client`).
    pub user_type: String,
    /// The user's id.
    pub uid: u64,
    /// Days of the month (1 to 31), ascending.
    pub days: Vec<u32>,
}

/// What [`LoginLog::expire_month`] did with a month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Expiry {
    /// Past retention and exported after it ended: its keys were deleted.
    Deleted {
        /// The month (`YYYY-MM`).
        month: String,
        /// How many of its keys existed (`None` when that is not known: a
        /// `DEL` was sent again after its reply was lost and found its key
        /// gone).
        keys: Option<u64>,
    },
    /// Not past retention yet.
    Kept {
        /// The month (`YYYY-MM`).
        month: String,
    },
    /// Past retention, but its last export ran before the month ended (or
    /// it never was exported): export it again first.
    NotExported {
        /// The month (`YYYY-MM`).
        month: String,
        /// When its last export ran (`YYYY-MM-DD`), if it ever did.
        last_export: Option<String>,
    },
}

impl LoginLog {
    /// The hash recording the exports: field `YYYY-MM`, value the date
    /// (`YYYY-MM-DD`) of the month's last export, `<prefix>exports`.
    pub fn exports_key(&self) -> String {
        self.settings.prefix.key("exports")
    }

    /// The users of every type who logged in during `month` (from its day
    /// indexes; query (7) over the whole month).
    pub fn month_users(&self, month: NaiveDate) -> Op<Vec<ActiveUser>> {
        checked(|| {
            let (first, last) = month_bounds(month)?;
            Ok(self.all_active_users(first, last))
        })
    }

    /// Each of `users`' login days in `month`: one `GET` of each user's
    /// log, in one batch.
    pub fn month_logins(&self, month: NaiveDate, users: &[ActiveUser]) -> Op<Vec<MonthLogins>> {
        let first = month_of(month);
        let label = first.format("%Y-%m").to_string();
        let mut batch = Batch::with_capacity(users.len());
        for u in users {
            let key = self.log_key(&u.user_type, u.uid, first);
            let mut cmd = redis::cmd("GET");
            cmd.arg(&key);
            batch.add(key, cmd);
        }
        let users = users.to_vec();
        Op::send(batch, move |replies| {
            let logs: Vec<Option<Vec<u8>>> = replies.all()?;
            Ok(users
                .into_iter()
                .zip(logs)
                .map(|(u, log)| MonthLogins {
                    month: label.clone(),
                    user_type: u.user_type,
                    uid: u.uid,
                    days: decode_bits(&log.unwrap_or_default())
                        .into_iter()
                        .filter(|&d| (1..=31).contains(&d))
                        .map(|d| d as u32)
                        .collect(),
                })
                .collect())
        })
    }

    /// Records that `month` was exported by a sync run on `on`.
    pub fn mark_exported(&self, month: NaiveDate, on: NaiveDate) -> Op<()> {
        let key = self.exports_key();
        let mut cmd = redis::cmd("HSET");
        cmd.arg(&key)
            .arg(month_of(month).format("%Y-%m").to_string())
            .arg(on.format("%Y-%m-%d").to_string());
        Op::<i64>::cmd(key, cmd).map(drop)
    }

    /// Every month with a recorded export, and the date of its last one.
    pub fn exports(&self) -> Op<Vec<(NaiveDate, NaiveDate)>> {
        let key = self.exports_key();
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(&key);
        Op::<Vec<(String, String)>>::cmd(key, cmd).map(|pairs| {
            let mut out: Vec<(NaiveDate, NaiveDate)> = pairs
                .into_iter()
                .filter_map(|(m, d)| {
                    let month = NaiveDate::parse_from_str(&format!("{m}-01"), "%Y-%m-%d").ok()?;
                    let on = NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok()?;
                    Some((month, on))
                })
                .collect();
            out.sort();
            out
        })
    }

    /// At a sync on `today`: deletes `month`'s keys (its users' logs, its
    /// day indexes and types set, its export record) when it ended more
    /// than `keep_days` days ago and its last export ran after it ended;
    /// otherwise keeps it and says why. `keep_days` below
    /// [`LoginLog::MIN_RETENTION_DAYS`] is refused.
    pub fn expire_month(&self, month: NaiveDate, keep_days: u32, today: NaiveDate) -> Op<Expiry> {
        checked(|| {
            if keep_days < MIN_RETENTION_DAYS {
                return Err(Error::invalid(
                    "retention",
                    format!("must be at least {MIN_RETENTION_DAYS} days after a month ends"),
                ));
            }
            let first = month_of(month);
            let end = end_of_month(first)?;
            let label = first.format("%Y-%m").to_string();
            if end + chrono::Days::new(u64::from(keep_days)) > today {
                return Ok(Op::ready(Expiry::Kept { month: label }));
            }
            let log = self.clone();
            Ok(self.exports().and_then(move |exports| {
                let last = exports.iter().find(|(m, _)| *m == first).map(|(_, on)| *on);
                match last {
                    Some(on) if on >= end => log
                        .delete_month(first)
                        .map(move |keys| Expiry::Deleted { month: label, keys }),
                    _ => Op::ready(Expiry::NotExported {
                        month: label,
                        last_export: last.map(|d| d.format("%Y-%m-%d").to_string()),
                    }),
                }
            }))
        })
    }

    /// Deletes every key of `month` (one `DEL` per key, one batch) and its
    /// export record; returns how many keys existed (`None`: not known).
    fn delete_month(&self, month: NaiveDate) -> Op<Option<u64>> {
        let log = self.clone();
        checked(|| {
            let (first, last) = month_bounds(month)?;
            Ok(self.types_between(first, last).and_then(move |types| {
                let log2 = log.clone();
                log.all_active_users(first, last).and_then(move |users| {
                    let mut keys: Vec<String> = users
                        .iter()
                        .map(|u| log2.log_key(&u.user_type, u.uid, first))
                        .collect();
                    for t in &types {
                        for d in first.iter_days().take_while(|d| *d <= last) {
                            keys.push(log2.index_key(t, d));
                        }
                    }
                    keys.push(log2.types_key(first));
                    let mut batch = Batch::with_capacity(keys.len() + 1);
                    for key in &keys {
                        let mut cmd = redis::cmd("DEL");
                        cmd.arg(key);
                        batch.add(key, cmd);
                    }
                    let exports = log2.exports_key();
                    let mut hdel = redis::cmd("HDEL");
                    hdel.arg(&exports).arg(first.format("%Y-%m").to_string());
                    batch.add(&exports, hdel);
                    Op::send(batch, |replies| {
                        let resent = replies.resent_each();
                        let mut n: Vec<i64> = replies.all()?;
                        n.pop();
                        Ok(n.into_iter()
                            .zip(resent)
                            .map(|(n, resent)| changed_count(n.max(0) as u64, 1, resent))
                            .sum::<Option<u64>>())
                    })
                })
            }))
        })
    }
}

/// The first and last day of `month`'s month.
fn month_bounds(month: NaiveDate) -> Result<(NaiveDate, NaiveDate)> {
    let first = month_of(month);
    let last = end_of_month(first)?
        .pred_opt()
        .ok_or_else(|| Error::invalid("month", "has no last day"))?;
    DayRange::new(first, last)?;
    Ok((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitmap::days::day;

    #[test]
    fn the_window_covers_last_month_before_the_8th() {
        assert_eq!(
            sync_months(day(2024, 3, 7)),
            [day(2024, 2, 1), day(2024, 3, 1)]
        );
        assert_eq!(sync_months(day(2024, 3, 8)), [day(2024, 3, 1)]);
        assert_eq!(
            sync_months(day(2024, 1, 2)),
            [day(2023, 12, 1), day(2024, 1, 1)]
        );
    }
}
