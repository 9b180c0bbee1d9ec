//! Periods of the analytics bitmaps: an hour, a day, an ISO week, a month
//! or a year of local time, their key labels, where they start and end,
//! and the period before or after.

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use serde::Serialize;

use crate::error::{Error, Result};

/// How finely an event is bucketed: one bitmap per hour, day, ISO week,
/// month or year.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One bitmap per hour (`H:2024-03-01T13`).
    Hour,
    /// One bitmap per day (`D:2024-03-01`).
    Day,
    /// One bitmap per ISO week, Monday to Sunday (`W:2024-W09`).
    Week,
    /// One bitmap per month (`M:2024-03`).
    Month,
    /// One bitmap per year (`Y:2024`).
    Year,
}

impl Granularity {
    /// Every granularity, finest first.
    pub const ALL: [Granularity; 5] = [
        Granularity::Hour,
        Granularity::Day,
        Granularity::Week,
        Granularity::Month,
        Granularity::Year,
    ];

    /// `hour`, `day`, `week`, `month` or `year`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::Year => "year",
        }
    }

    /// The granularity named `name` (as [`Granularity::name`] spells it).
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|g| g.name() == name)
            .ok_or_else(|| {
                Error::invalid(
                    "granularity",
                    format!("`{name}` is not one of hour, day, week, month, year"),
                )
            })
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// One period of local time: what one bitmap of an event covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Period {
    /// The hour starting at `hour`:00 of the day.
    Hour(NaiveDate, u32),
    /// A calendar day.
    Day(NaiveDate),
    /// ISO week `week` of ISO year `year` (Monday to Sunday).
    Week(i32, u32),
    /// Month `month` (1..=12) of `year`.
    Month(i32, u32),
    /// A calendar year.
    Year(i32),
}

impl Period {
    /// The period of `granularity` that local time `t` falls in.
    pub fn containing(granularity: Granularity, t: NaiveDateTime) -> Self {
        let d = t.date();
        match granularity {
            Granularity::Hour => Self::Hour(d, t.hour()),
            Granularity::Day => Self::Day(d),
            Granularity::Week => {
                let w = d.iso_week();
                Self::Week(w.year(), w.week())
            }
            Granularity::Month => Self::Month(d.year(), d.month()),
            Granularity::Year => Self::Year(d.year()),
        }
    }

    /// The period's granularity.
    pub fn granularity(self) -> Granularity {
        match self {
            Self::Hour(..) => Granularity::Hour,
            Self::Day(_) => Granularity::Day,
            Self::Week(..) => Granularity::Week,
            Self::Month(..) => Granularity::Month,
            Self::Year(_) => Granularity::Year,
        }
    }

    /// The local time the period starts at.
    pub fn start(self) -> Result<NaiveDateTime> {
        let bad = || Error::invalid("period", format!("{self:?} is not a calendar period"));
        let date = match self {
            Self::Hour(d, h) => {
                let t = NaiveTime::from_hms_opt(h, 0, 0).ok_or_else(bad)?;
                return Ok(d.and_time(t));
            }
            Self::Day(d) => Some(d),
            Self::Week(y, w) => NaiveDate::from_isoywd_opt(y, w, chrono::Weekday::Mon),
            Self::Month(y, m) => NaiveDate::from_ymd_opt(y, m, 1),
            Self::Year(y) => NaiveDate::from_ymd_opt(y, 1, 1),
        }
        .ok_or_else(bad)?;
        Ok(date.and_time(NaiveTime::MIN))
    }

    /// The period `n` periods later (earlier for a negative `n`).
    pub fn offset(self, n: i64) -> Result<Self> {
        let start = self.start()?;
        let moved = match self {
            Self::Hour(..) => start.checked_add_signed(chrono::TimeDelta::hours(n)),
            Self::Day(_) => start.checked_add_signed(chrono::TimeDelta::days(n)),
            Self::Week(..) => start.checked_add_signed(chrono::TimeDelta::weeks(n)),
            Self::Month(y, m) => {
                let months = i64::from(y) * 12 + i64::from(m) - 1 + n;
                let (y, m) = (months.div_euclid(12), months.rem_euclid(12) + 1);
                i32::try_from(y)
                    .ok()
                    .and_then(|y| NaiveDate::from_ymd_opt(y, m as u32, 1))
                    .map(|d| d.and_time(NaiveTime::MIN))
            }
            Self::Year(y) => i32::try_from(i64::from(y) + n)
                .ok()
                .and_then(|y| NaiveDate::from_ymd_opt(y, 1, 1))
                .map(|d| d.and_time(NaiveTime::MIN)),
        };
        let t = moved.ok_or_else(|| Error::invalid("period", "is outside the calendar"))?;
        Ok(Self::containing(self.granularity(), t))
    }

    /// The local time the period ends at (the next period's start).
    pub fn end(self) -> Result<NaiveDateTime> {
        self.offset(1)?.start()
    }

    /// The key label: `H:2024-03-01T13`, `D:2024-03-01`, `W:2024-W09`,
    /// `M:2024-03`, `Y:2024`.
    pub fn label(self) -> String {
        match self {
            Self::Hour(d, h) => format!("H:{}T{h:02}", d.format("%Y-%m-%d")),
            Self::Day(d) => format!("D:{}", d.format("%Y-%m-%d")),
            Self::Week(y, w) => format!("W:{y:04}-W{w:02}"),
            Self::Month(y, m) => format!("M:{y:04}-{m:02}"),
            Self::Year(y) => format!("Y:{y:04}"),
        }
    }
}

impl std::str::FromStr for Period {
    type Err = Error;

    /// A period from its [label](Period::label).
    fn from_str(label: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "period",
                format!(
                    "`{label}` is not a period label (H:2024-03-04T10, D:2024-03-04, W:2024-W10, M:2024-03, Y:2024)"
                ),
            )
        };
        let (kind, rest) = label.split_once(':').ok_or_else(bad)?;
        let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
        let date = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| bad());
        let p = match kind {
            "H" => {
                let (d, h) = rest.split_once('T').ok_or_else(bad)?;
                Self::Hour(date(d)?, num(h)?)
            }
            "D" => Self::Day(date(rest)?),
            "W" => {
                let (y, w) = rest.split_once("-W").ok_or_else(bad)?;
                Self::Week(y.parse().map_err(|_| bad())?, num(w)?)
            }
            "M" => {
                let (y, m) = rest.split_once('-').ok_or_else(bad)?;
                Self::Month(y.parse().map_err(|_| bad())?, num(m)?)
            }
            "Y" => Self::Year(rest.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        };
        // Only the canonical spelling of a valid period.
        if p.start().is_err() || p.label() != label {
            return Err(bad());
        }
        Ok(p)
    }
}

impl std::fmt::Display for Period {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, m: u32, d: u32, h: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, 30, 0)
            .unwrap()
    }

    #[test]
    fn labels_and_neighbours() {
        let t = at(2024, 12, 30, 7);
        let labels: Vec<String> = Granularity::ALL
            .iter()
            .map(|g| Period::containing(*g, t).label())
            .collect();
        // 2024-12-30 is a Monday of ISO week 1 of 2025.
        assert_eq!(
            labels,
            [
                "H:2024-12-30T07",
                "D:2024-12-30",
                "W:2025-W01",
                "M:2024-12",
                "Y:2024"
            ]
        );
        let week = Period::containing(Granularity::Week, t);
        assert_eq!(week.offset(-1).unwrap(), Period::Week(2024, 52));
        assert_eq!(
            week.end().unwrap(),
            at(2025, 1, 6, 0) - chrono::TimeDelta::minutes(30)
        );
        let month = Period::Month(2024, 12);
        assert_eq!(month.offset(1).unwrap(), Period::Month(2025, 1));
        assert_eq!(month.offset(-12).unwrap(), Period::Month(2023, 12));
        assert_eq!(
            Period::Hour(t.date(), 23).offset(1).unwrap().label(),
            "H:2024-12-31T00"
        );
        assert!(Period::Week(2024, 60).start().is_err());
        for l in labels {
            assert_eq!(l.parse::<Period>().unwrap().label(), l);
        }
        for bad in [
            "D:2024-3-04",
            "H:2024-03-04T24",
            "W:2024-W54",
            "M:2024-13",
            "X:1",
            "D2024",
        ] {
            assert!(bad.parse::<Period>().is_err(), "{bad}");
        }
        assert_eq!(Granularity::parse("week").unwrap(), Granularity::Week);
        assert!(Granularity::parse("weeks").is_err());
    }
}
