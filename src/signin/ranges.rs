//! Users signed in on any / every day of a range, and their counts: one
//! script when the days share a slot (a tag, or one server), else the days
//! fetched in one batch and combined client-side.

use chrono::NaiveDate;

use super::SignIn;
use crate::bitmap::combine::{self, BitOp, DayKeys};
use crate::bitmap::days::DayRange;
use crate::bitmap::{checked, decode_bits};
use crate::core::Op;

impl SignIn {
    /// The op `plan` builds from the keys of the days from `from` to `to`
    /// (or the refusal of the range).
    fn over_range<T: Send + 'static>(
        &self,
        from: NaiveDate,
        to: NaiveDate,
        plan: impl FnOnce(DayKeys) -> Op<T>,
    ) -> Op<T> {
        checked(|| {
            let keys = DayRange::new(from, to)?
                .days()
                .map(|d| self.key(d))
                .collect();
            Ok(plan(DayKeys::new(self.tmp_base(), keys)))
        })
    }

    fn users(&self, op: BitOp, from: NaiveDate, to: NaiveDate) -> Op<Vec<u64>> {
        self.over_range(from, to, |days| {
            combine::combine(op, vec![days]).map(|bitmap| decode_bits(&bitmap))
        })
    }

    /// Users who signed in on at least one day from `from` to `to`
    /// inclusive, ascending.
    pub fn active_any(&self, from: NaiveDate, to: NaiveDate) -> Op<Vec<u64>> {
        self.users(BitOp::Or, from, to)
    }

    /// Users who signed in on every day from `from` to `to` inclusive,
    /// ascending.
    pub fn active_every(&self, from: NaiveDate, to: NaiveDate) -> Op<Vec<u64>> {
        self.users(BitOp::And, from, to)
    }

    /// How many users signed in on at least one day of the range (only the
    /// count crosses the network when one script can combine the days).
    pub fn count_any(&self, from: NaiveDate, to: NaiveDate) -> Op<u64> {
        self.over_range(from, to, |days| combine::count(BitOp::Or, days))
    }

    /// How many users signed in on every day of the range.
    pub fn count_every(&self, from: NaiveDate, to: NaiveDate) -> Op<u64> {
        self.over_range(from, to, |days| combine::count(BitOp::And, days))
    }
}
