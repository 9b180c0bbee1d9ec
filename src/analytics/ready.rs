//! Ready queries over consecutive periods: one id's streak (runs of
//! consecutive periods, counted by `analytics.streak` on the server) and the
//! ids that did an event in at least `n` of the last `m` periods (an
//! expression, so one `analytics.query` call).

use chrono::TimeZone;
use serde::{Serialize, Serializer};

use super::builder::check_event_name;
use super::{Analytics, Expr, Period, Query};
use crate::bitmap::checked;
use crate::core::Op;
use crate::error::{Error, Result};
use crate::scripts;

/// The value of [`Analytics::MAX_RANGE`](crate::analytics::Analytics::MAX_RANGE).
pub(crate) const MAX_RANGE: usize = 1_000;

impl crate::analytics::Analytics {
    /// The most periods a streak or an "active in n of the last m" reads.
    pub const MAX_RANGE: usize = MAX_RANGE;
}

/// One id's runs of consecutive periods with an event, within a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Streak {
    /// The longest run of consecutive periods.
    pub longest: u32,
    /// The last period of the (earliest) longest run, `None` when there is
    /// none (serialized as its label, `D:2024-03-04`).
    #[serde(serialize_with = "label")]
    pub longest_ends: Option<Period>,
    /// The run that ends with the range's last period (0 when the id did not
    /// do the event then).
    pub current: u32,
    /// How many periods of the range the id did the event in.
    pub marked: u32,
}

fn label<S: Serializer>(p: &Option<Period>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&p.label()),
        None => s.serialize_none(),
    }
}

/// Refuses a range from `from` to `to` whose ends differ in granularity or
/// are out of order.
pub(super) fn check_range(from: Period, to: Period) -> Result<()> {
    if from.granularity() != to.granularity() {
        return Err(Error::invalid(
            "range",
            format!("{from} and {to} are periods of different granularities"),
        ));
    }
    if from > to {
        return Err(Error::invalid("range", format!("{from} is after {to}")));
    }
    Ok(())
}

/// The periods from `from` to `to` inclusive (one granularity, at most
/// [`Analytics::MAX_RANGE`]).
fn range(from: Period, to: Period) -> Result<Vec<Period>> {
    check_range(from, to)?;
    let mut periods = vec![from];
    while *periods.last().expect("one") != to {
        if periods.len() == MAX_RANGE {
            return Err(Error::invalid(
                "range",
                format!("{from} to {to} is more than {MAX_RANGE} periods"),
            ));
        }
        periods.push(periods.last().expect("one").offset(1)?);
    }
    Ok(periods)
}

/// The `m` periods ending with `last`, oldest first.
fn last_periods(last: Period, m: usize) -> Result<Vec<Period>> {
    if m == 0 || m > MAX_RANGE {
        return Err(Error::invalid(
            "m",
            format!("must be from 1 to {MAX_RANGE}"),
        ));
    }
    (0..m).rev().map(|i| last.offset(-(i as i64))).collect()
}

impl<Tz: TimeZone> Analytics<Tz> {
    /// `id`'s runs of consecutive periods with `event` from `from` to `to`
    /// inclusive (one granularity, at most [`Analytics::MAX_RANGE`] periods): one
    /// `analytics.streak` call (the event's bitmaps share a slot).
    pub fn streak(&self, event: &str, id: u64, from: Period, to: Period) -> Op<Streak> {
        checked(|| {
            check_event_name("event", event)?;
            let periods = range(from, to)?;
            if id > self.max_id {
                return Ok(Op::ready(Streak::default()));
            }
            let keys: Vec<String> = periods.iter().map(|p| self.key(event, *p)).collect();
            let call = scripts::analytics::streak(&keys, id as i64);
            Ok(Op::script(call).map(move |r: Vec<i64>| {
                let n = |i: usize| r.get(i).copied().unwrap_or(0).max(0) as u32;
                Streak {
                    longest: n(0),
                    longest_ends: (n(1) > 0).then(|| periods[n(1) as usize - 1]),
                    current: n(2),
                    marked: n(3),
                }
            }))
        })
    }

    /// The ids that did `event` in at least `n` of the `m` periods ending
    /// with `last` (`n` from 1 to 32, at most `m`; `m` at most
    /// [`Analytics::MAX_RANGE`]), to answer with [`Query::count`], [`Query::contains`]
    /// or [`Query::members`] in one `analytics.query` call. With `n == m`:
    /// the ids on a streak of at least `m` periods ending with `last`
    /// (one `BITOP AND`).
    pub fn active_in_last(&self, event: &str, n: usize, m: usize, last: Period) -> Query {
        let leaves = last_periods(last, m).map(|ps| {
            ps.into_iter()
                .map(|p| Expr::event(event, p))
                .collect::<Vec<_>>()
        });
        match leaves {
            Ok(v) if n == m => self.query(Expr::And(v)),
            Ok(v) => self.query(Expr::at_least(n, v)),
            Err(e) => self.query(Expr::event(event, last)).refuse(e),
        }
    }
}
