//! Queries (6) and (7): the users active in a range, read from the day
//! indexes (one `signin.combine` OR per month of the range, one batch), and
//! the user types seen in its months.

use std::collections::BTreeSet;

use chrono::NaiveDate;

use super::{ActiveUser, LoginLog, check_type};
use crate::bitmap::combine::{self, BitOp, DayKeys};
use crate::bitmap::days::DayRange;
use crate::bitmap::{checked, decode_bits};
use crate::core::{Batch, Op};

impl LoginLog {
    /// The OR of the day indexes of `user_type` over `range`: one group per
    /// month (the month's indexes share its tag).
    fn union(&self, user_type: &str, range: DayRange) -> Op<Vec<u8>> {
        let months = range
            .months()
            .iter()
            .map(|m| {
                let keys = m.days().map(|d| self.index_key(user_type, d)).collect();
                DayKeys::new(self.month_tag(m.from()), keys)
            })
            .collect();
        combine::combine(BitOp::Or, months)
    }

    /// (6) The users of `user_type` who logged in on any day from `from` to
    /// `to` inclusive, ascending (from the day indexes; no `KEYS`/`SCAN`).
    pub fn active_users(&self, user_type: &str, from: NaiveDate, to: NaiveDate) -> Op<Vec<u64>> {
        checked(|| {
            check_type(user_type)?;
            let range = DayRange::new(from, to)?;
            Ok(self
                .union(user_type, range)
                .map(|bitmap| decode_bits(&bitmap)))
        })
    }

    /// The user types recorded in any month from `from` to `to`, sorted
    /// (`SMEMBERS` of each month's types set, one batch).
    pub fn types_between(&self, from: NaiveDate, to: NaiveDate) -> Op<Vec<String>> {
        checked(|| Ok(self.types_in(DayRange::new(from, to)?)))
    }

    fn types_in(&self, range: DayRange) -> Op<Vec<String>> {
        let mut batch = Batch::new();
        for m in range.months() {
            let key = self.types_key(m.from());
            let mut smembers = redis::cmd("SMEMBERS");
            smembers.arg(&key);
            batch.add(key, smembers);
        }
        Op::send(batch, |replies| {
            let sets: Vec<Vec<String>> = replies.all()?;
            let all: BTreeSet<String> = sets.into_iter().flatten().collect();
            Ok(all.into_iter().collect())
        })
    }

    /// (7) Every user, of every type, who logged in on any day from `from`
    /// to `to` inclusive, sorted by type then uid: the types of the range's
    /// months, then every type's months in one batch.
    pub fn all_active_users(&self, from: NaiveDate, to: NaiveDate) -> Op<Vec<ActiveUser>> {
        checked(|| {
            let range = DayRange::new(from, to)?;
            let log = self.clone();
            Ok(self.types_in(range).and_then(move |types| {
                let unions = types.iter().map(|t| log.union(t, range)).collect();
                Op::join(unions).map(move |bitmaps| {
                    types
                        .into_iter()
                        .zip(bitmaps)
                        .flat_map(|(user_type, bitmap)| {
                            decode_bits(&bitmap).into_iter().map(move |uid| ActiveUser {
                                user_type: user_type.clone(),
                                uid,
                            })
                        })
                        .collect()
                })
            }))
        })
    }
}
