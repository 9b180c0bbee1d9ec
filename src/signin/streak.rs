//! One user's sign-in days in a range and its consecutive-day runs
//! ([`Streak`]): one `GETBIT` per day, in one batch.

use chrono::NaiveDate;
use serde::{Serialize, Serializer};

use super::SignIn;
use crate::bitmap::days::DayRange;
use crate::bitmap::{checked, offsets};
use crate::core::{Batch, Op};

/// A user's consecutive-day sign-in runs within a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Streak {
    /// The longest run of consecutive days in the range.
    pub longest: u32,
    /// The last day of the (earliest) longest run, `None` when there is none
    /// (serialized as `YYYY-MM-DD`).
    #[serde(serialize_with = "iso_day")]
    pub longest_ends: Option<NaiveDate>,
    /// The run that ends on the range's last day (0 when the user did not
    /// sign in that day).
    pub current: u32,
}

fn iso_day<S: Serializer>(day: &Option<NaiveDate>, s: S) -> Result<S::Ok, S::Error> {
    match day {
        Some(d) => s.serialize_some(&d.format("%Y-%m-%d").to_string()),
        None => s.serialize_none(),
    }
}

impl Streak {
    /// The runs of `days` (ascending) in a range ending on `last`.
    fn of(days: &[NaiveDate], last: NaiveDate) -> Self {
        let mut s = Streak::default();
        let mut run = 0u32;
        let mut prev: Option<NaiveDate> = None;
        for &d in days {
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
        if prev == Some(last) {
            s.current = run;
        }
        s
    }
}

impl SignIn {
    /// The days from `from` to `to` inclusive on which `uid` signed in,
    /// ascending.
    pub fn days_signed_in(&self, uid: u64, from: NaiveDate, to: NaiveDate) -> Op<Vec<NaiveDate>> {
        checked(|| {
            let range = DayRange::new(from, to)?;
            offsets::check_uid(uid, self.settings.max_uid)?;
            let days: Vec<NaiveDate> = range.days().collect();
            let mut batch = Batch::with_capacity(days.len());
            for d in &days {
                let key = self.key(*d);
                let mut getbit = redis::cmd("GETBIT");
                getbit.arg(&key).arg(uid);
                batch.add(key, getbit);
            }
            Ok(Op::send(batch, move |replies| {
                let bits: Vec<i64> = replies.all()?;
                Ok(days
                    .into_iter()
                    .zip(bits)
                    .filter(|(_, bit)| *bit == 1)
                    .map(|(d, _)| d)
                    .collect())
            }))
        })
    }

    /// `uid`'s consecutive-day sign-in runs from `from` to `to` inclusive.
    pub fn streak(&self, uid: u64, from: NaiveDate, to: NaiveDate) -> Op<Streak> {
        self.days_signed_in(uid, from, to)
            .map(move |days| Streak::of(&days, to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaks_serialize_with_iso_days() {
        let d = |n| NaiveDate::from_ymd_opt(2024, 2, n).unwrap();
        let s = Streak::of(&[d(1), d(2), d(4)], d(4));
        assert_eq!((s.longest, s.longest_ends, s.current), (2, Some(d(2)), 1));
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"longest":2,"longest_ends":"2024-02-02","current":1}"#
        );
        let none = serde_json::to_string(&Streak::default()).unwrap();
        assert_eq!(none, r#"{"longest":0,"longest_ends":null,"current":0}"#);
    }
}
