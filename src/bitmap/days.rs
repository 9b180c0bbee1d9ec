//! Day ranges: a validated `from..=to`, its days and calendar months, and
//! the expiry of a period's keys by [`Retention`].

use chrono::{Datelike, NaiveDate, NaiveTime};

use crate::core::Retention;
use crate::error::{Error, Result};

/// The longest day range a query accepts.
pub(crate) const MAX_RANGE_DAYS: i64 = 3660;

/// The days from `from` to `to` inclusive: never reversed, at most
/// [`MAX_RANGE_DAYS`] days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DayRange {
    from: NaiveDate,
    to: NaiveDate,
}

impl DayRange {
    pub(crate) fn new(from: NaiveDate, to: NaiveDate) -> Result<Self> {
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
        Ok(Self { from, to })
    }

    pub(crate) fn from(&self) -> NaiveDate {
        self.from
    }

    pub(crate) fn to(&self) -> NaiveDate {
        self.to
    }

    /// Every day of the range, ascending.
    pub(crate) fn days(&self) -> impl Iterator<Item = NaiveDate> + use<> {
        let to = self.to;
        self.from.iter_days().take_while(move |d| *d <= to)
    }

    /// The range cut at month boundaries: one range per calendar month, each
    /// with its first and last day inside this range.
    pub(crate) fn months(&self) -> Vec<DayRange> {
        let mut out = Vec::new();
        let mut start = self.from;
        loop {
            let next = first_of_next_month(start);
            let end = next
                .and_then(|n| n.pred_opt())
                .map_or(self.to, |last| last.min(self.to));
            out.push(DayRange {
                from: start,
                to: end,
            });
            match next {
                Some(n) if n <= self.to => start = n,
                _ => return out,
            }
        }
    }
}

/// The first day of the month after `day`'s (`None` past the calendar).
fn first_of_next_month(day: NaiveDate) -> Option<NaiveDate> {
    let (y, m) = if day.month() == 12 {
        (day.year() + 1, 1)
    } else {
        (day.year(), day.month() + 1)
    };
    NaiveDate::from_ymd_opt(y, m, 1)
}

/// The day after `day`: when a day's keys' period ends.
pub(crate) fn end_of_day(day: NaiveDate) -> Result<NaiveDate> {
    day.succ_opt()
        .ok_or_else(|| Error::invalid("day", format!("{day} has no next day")))
}

/// The first day of the next month: when a month's keys' period ends.
pub(crate) fn end_of_month(day: NaiveDate) -> Result<NaiveDate> {
    first_of_next_month(day)
        .ok_or_else(|| Error::invalid("day", format!("the month of {day} has no next month")))
}

/// The `EXPIREAT` (unix seconds) that a script gets for a key whose period
/// ends at 00:00 UTC of `period_end`; 0 (no TTL) when kept forever. An
/// instant at or before the epoch is refused (see [`Retention::expire_at`]).
pub(crate) fn expire_at(retention: Retention, period_end: NaiveDate) -> Result<i64> {
    let end = period_end.and_time(NaiveTime::MIN).and_utc().timestamp();
    Ok(retention.expire_at(end)?.unwrap_or(0))
}

/// The day `y-m-d`, for the tests of the day-keyed patterns.
#[cfg(test)]
pub(crate) fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_into_months() {
        let r = DayRange::new(day(2023, 12, 30), day(2024, 3, 1)).unwrap();
        let months: Vec<_> = r.months().iter().map(|m| (m.from(), m.to())).collect();
        assert_eq!(
            months,
            [
                (day(2023, 12, 30), day(2023, 12, 31)),
                (day(2024, 1, 1), day(2024, 1, 31)),
                (day(2024, 2, 1), day(2024, 2, 29)),
                (day(2024, 3, 1), day(2024, 3, 1)),
            ]
        );
        assert_eq!(r.days().count(), 63);
        let one = DayRange::new(day(2024, 2, 29), day(2024, 2, 29)).unwrap();
        assert_eq!(one.months(), [one]);
        assert!(DayRange::new(day(2024, 1, 2), day(2024, 1, 1)).is_err());
        assert!(DayRange::new(day(2000, 1, 1), day(2011, 1, 1)).is_err());
        let last = DayRange::new(NaiveDate::MAX, NaiveDate::MAX).unwrap();
        assert_eq!(last.months(), [last]);
        assert!(end_of_day(NaiveDate::MAX).is_err());
    }

    #[test]
    fn expiry_counts_from_the_end_of_the_period() {
        assert_eq!(expire_at(Retention::Forever, day(2024, 1, 1)).unwrap(), 0);
        assert_eq!(
            expire_at(Retention::days(1), day(1970, 1, 1)).unwrap(),
            86_400
        );
        assert!(expire_at(Retention::days(0), day(1970, 1, 1)).is_err());
        assert_eq!(end_of_month(day(2024, 12, 31)).unwrap(), day(2025, 1, 1));
    }
}
