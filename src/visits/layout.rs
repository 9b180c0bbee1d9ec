//! A visit day's layout stored with its data: the meta hash
//! `<prefix>{<name>:<YYYY-MM-DD>}:meta` (its shard count), which
//! `visits.add` and `visits.add_batch` write atomically with the day's first
//! members (the day's keys share a slot) and check on every call; readers
//! find the shard count of a day, or of a range of days, here.

use chrono::{NaiveDate, TimeZone};

use super::counter::VisitCounter;
use crate::bitmap::days::DayRange;
use crate::core::{Batch, Op};
use crate::error::{ErrorKind, Result};

impl<Tz: TimeZone> VisitCounter<Tz> {
    /// The day's meta key (its layout).
    pub fn meta_key(&self, day: NaiveDate) -> String {
        format!("{}:meta", self.day_tag(day))
    }

    /// The shard count stored with `day`'s data, `None` for a day without
    /// one (no visits yet, or written before days stored their layout).
    pub fn stored_shards(&self, day: NaiveDate) -> Op<Option<u32>> {
        self.stored_shards_between(day, day)
    }

    /// The shard count stored with the days from `from` to `to` inclusive
    /// (one batch), `None` when no day of the range stores one;
    /// [`ErrorKind::LayoutMismatch`] when two days store different ones
    /// (their visits cannot be unioned shard by shard).
    pub fn stored_shards_between(&self, from: NaiveDate, to: NaiveDate) -> Op<Option<u32>> {
        let range = match DayRange::new(from, to) {
            Ok(r) => r,
            Err(e) => return Op::fail(e),
        };
        let mut batch = Batch::new();
        let keys: Vec<String> = range.days().map(|d| self.meta_key(d)).collect();
        for key in &keys {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(key).arg("shards");
            batch.add(key, cmd);
        }
        Op::send(batch, move |replies| {
            let mut found: Option<(String, u32)> = None;
            for (key, shards) in keys.into_iter().zip(replies.all::<Option<u32>>()?) {
                let Some(shards) = shards else { continue };
                match &found {
                    Some((first, n)) if *n != shards => {
                        return Err(ErrorKind::LayoutMismatch {
                            key,
                            stored: format!("shards={shards}"),
                            requested: format!("shards={n} (stored at {first})"),
                        }
                        .into());
                    }
                    Some(_) => {}
                    None => found = Some((key, shards)),
                }
            }
            Ok::<_, crate::Error>(found.map(|(_, n)| n))
        })
    }

    /// This counter with another shard count (same name, zone, prefix,
    /// retention): e.g. the one [`VisitCounter::stored_shards`] found.
    pub fn with_shards(&self, shards: u32) -> Result<Self> {
        super::VisitCounter::builder(&self.name, self.tz.clone(), shards)
            .prefix(self.prefix.clone())
            .retention(self.retention)
            .build()
    }
}
