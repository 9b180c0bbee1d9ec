//! Days in the counter's time zone: which day an instant falls on, when a
//! day ends (and so when its keys expire), and the key names of a day.

use chrono::{DateTime, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc};

use super::counter::VisitCounter;
use super::shards::shard_of;
use crate::error::{Error, Result};

/// The latest `EXPIREAT` the scripts accept (15 decimal digits).
const MAX_EXPIRE_AT: i64 = 999_999_999_999_999;

impl<Tz: TimeZone> VisitCounter<Tz> {
    /// The calendar day of `instant` in the counter's zone.
    pub fn day_of<Z: TimeZone>(&self, instant: &DateTime<Z>) -> NaiveDate {
        instant.with_timezone(&self.tz).date_naive()
    }

    /// The first instant of the day after `day` in the counter's zone (the
    /// PHP recipe's "23:59:59" plus one second, but correct on 23- and
    /// 25-hour days). When local midnight falls in a DST gap it is the first
    /// local time after the gap; when it is ambiguous, the earlier one.
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

    /// The `EXPIREAT` (unix seconds) of `day`'s keys: the end of the day plus
    /// the retention's grace, `None` when they never expire.
    pub fn expire_at(&self, day: NaiveDate) -> Result<Option<i64>> {
        let at = self
            .retention
            .expire_at(self.end_of_day(day)?.timestamp())?;
        if at.is_some_and(|at| at > MAX_EXPIRE_AT) {
            return Err(Error::invalid(
                "day",
                format!("{day} ends outside the unix time range"),
            ));
        }
        Ok(at)
    }

    /// The unix second from which visits to `day` are refused: the end of
    /// the day plus the counter's late window (`None`: accepted as long as
    /// its keys live).
    pub fn accept_until(&self, day: NaiveDate) -> Result<Option<i64>> {
        let Some(late) = self.late_window else {
            return Ok(None);
        };
        let at = self.end_of_day(day)?.timestamp() + late.as_secs() as i64;
        if at > MAX_EXPIRE_AT {
            return Err(Error::invalid(
                "day",
                format!("{day} ends outside the unix time range"),
            ));
        }
        Ok(Some(at))
    }

    /// The scripts' `expire_at` and `accept_until` arguments: 0 for none.
    pub(super) fn day_args(&self, day: NaiveDate) -> Result<(i64, i64)> {
        Ok((
            self.expire_at(day)?.unwrap_or(0),
            self.accept_until(day)?.unwrap_or(0),
        ))
    }

    /// `<prefix>{<name>:<YYYY-MM-DD>}`: what every key of `day` starts with.
    pub(super) fn day_tag(&self, day: NaiveDate) -> String {
        self.prefix
            .tagged(&format!("{}:{}", self.name, day.format("%Y-%m-%d")))
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
}
