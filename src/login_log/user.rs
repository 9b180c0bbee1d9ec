//! Queries (2) to (5) on one user's monthly logs: a day, a month, a range,
//! the days of a range (one batch over the months of a range).

use chrono::{Datelike, NaiveDate};

use super::{LoginLog, check_type};
use crate::bitmap::checked;
use crate::bitmap::days::DayRange;
use crate::core::{Batch, Op};
use crate::error::{Error, Result};
use crate::scripts;

impl LoginLog {
    /// (2) Whether the user logged in on `day` (`GETBIT`).
    pub fn logged_in_on(&self, user_type: &str, uid: u64, day: NaiveDate) -> Op<bool> {
        checked(|| {
            check_type(user_type)?;
            let key = self.log_key(user_type, uid, day);
            let mut getbit = redis::cmd("GETBIT");
            getbit.arg(&key).arg(day.day());
            Ok(Op::<i64>::cmd(&key, getbit).map(|bit| bit == 1))
        })
    }

    /// (3) Whether the user logged in during the month `year`-`month`.
    pub fn logged_in_in_month(&self, user_type: &str, uid: u64, year: i32, month: u32) -> Op<bool> {
        self.days_in_month(user_type, uid, year, month)
            .map(|n| n > 0)
    }

    /// The number of days the user logged in during `year`-`month` (the
    /// recipe's `BITCOUNT` of the log).
    pub fn days_in_month(&self, user_type: &str, uid: u64, year: i32, month: u32) -> Op<u32> {
        checked(|| {
            check_type(user_type)?;
            let first = NaiveDate::from_ymd_opt(year, month, 1).ok_or_else(|| {
                Error::invalid("month", format!("{year}-{month:02} is not a valid month"))
            })?;
            let key = self.log_key(user_type, uid, first);
            let mut bitcount = redis::cmd("BITCOUNT");
            bitcount.arg(&key);
            Ok(Op::<i64>::cmd(&key, bitcount).map(|n| n.max(0) as u32))
        })
    }

    /// (4) Whether the user logged in on any day from `from` to `to`
    /// inclusive (`BITCOUNT … BIT` of each month, one batch).
    pub fn logged_in_between(
        &self,
        user_type: &str,
        uid: u64,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Op<bool> {
        checked(|| {
            check_type(user_type)?;
            let mut batch = Batch::new();
            for m in DayRange::new(from, to)?.months() {
                let key = self.log_key(user_type, uid, m.from());
                let mut bitcount = redis::cmd("BITCOUNT");
                bitcount
                    .arg(&key)
                    .arg(m.from().day())
                    .arg(m.to().day())
                    .arg("BIT");
                batch.add(key, bitcount);
            }
            Ok(Op::send(batch, |replies| {
                Ok(replies.all::<i64>()?.iter().any(|&n| n > 0))
            }))
        })
    }

    /// (5) The days from `from` to `to` inclusive on which the user logged
    /// in, ascending; never a day outside the range (`login_log.days`, one
    /// read-only call per month, one batch).
    pub fn login_days(
        &self,
        user_type: &str,
        uid: u64,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Op<Vec<NaiveDate>> {
        checked(|| {
            check_type(user_type)?;
            let months = DayRange::new(from, to)?.months();
            let mut batch = Batch::with_capacity(months.len());
            for m in &months {
                batch.script(scripts::login_log::days(
                    &self.log_key(user_type, uid, m.from()),
                    i64::from(m.from().day()),
                    i64::from(m.to().day()),
                ));
            }
            Ok(Op::send(batch, move |replies| {
                let per_month: Vec<Vec<i64>> = replies.all()?;
                let mut out = Vec::new();
                for (m, days) in months.iter().zip(per_month) {
                    for d in days {
                        out.push(day_of(m, d)?);
                    }
                }
                Ok(out)
            }))
        })
    }
}

/// Day `d` of the month of `m`, which must lie in `m`.
fn day_of(m: &DayRange, d: i64) -> Result<NaiveDate> {
    u32::try_from(d)
        .ok()
        .and_then(|d| m.from().with_day(d))
        .filter(|date| *date >= m.from() && *date <= m.to())
        .ok_or_else(|| {
            Error::unexpected(format!(
                "login_log.days answered day {d}, outside {}..{}",
                m.from(),
                m.to()
            ))
        })
}
