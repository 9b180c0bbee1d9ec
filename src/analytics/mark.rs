//! Marking events: an id in every configured period of an instant (one
//! `analytics.mark` call), many ids in one batch, and unique events.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone};

use super::builder::check_event_name;
use super::{Analytics, Period};
use crate::bitmap::checked;
use crate::core::resend::{changed, changed_count};
use crate::core::{Batch, Op};
use crate::error::{Error, ErrorKind, Result};
use crate::scripts;

/// The latest `EXPIREAT` the script accepts (15 decimal digits).
const MAX_EXPIRE_AT: i64 = 999_999_999_999_999;

/// One `analytics.mark` group: the bitmaps, their expiries and the ids.
type Group = (Vec<String>, Vec<i64>, Vec<i64>);

/// The most ids one `analytics.mark` call carries (a batch sends more
/// calls).
pub(super) const IDS_PER_CALL: usize = 5_000;

impl<Tz: TimeZone> Analytics<Tz> {
    /// Marks `id` in `event`'s bitmaps of every configured period of `at`
    /// (one atomic script); `Some(true)` when `id` was new in the finest
    /// period, `None` when that is not known (sent again after its reply was
    /// lost, the resend found the bit set).
    pub fn mark<Z: TimeZone>(&self, event: &str, id: u64, at: &DateTime<Z>) -> Op<Option<bool>> {
        checked(|| {
            let (keys, mut values) = self.mark_keys(event, at)?;
            self.check_id(id)?;
            if self.hll {
                let call = self.hll_call(&keys, &values, true, [id.to_string()])?;
                return Ok(Op::script_resent(call)
                    .map(|(r, resent)| changed(r.get(1) == Some(&1), resent)));
            }
            values.push(id as i64);
            Ok(
                Op::script_resent(scripts::analytics::mark(&keys, self.max_id as i64, &values))
                    .map(|(new, resent)| changed(new == 1, resent)),
            )
        })
    }

    /// Marks every `(id, at)` of `events` in `event`'s bitmaps: one
    /// `analytics.mark` call per finest period (at most 5,000 ids each), all
    /// in one batch. Returns how many were new in their finest period
    /// (`None` when a resend makes that unknown). Every id is checked before
    /// anything is sent.
    pub fn mark_many<Z: TimeZone>(
        &self,
        event: &str,
        events: &[(u64, DateTime<Z>)],
    ) -> Op<Option<u64>> {
        checked(|| {
            let finest = self.granularities[0];
            let mut groups: BTreeMap<Period, Group> = BTreeMap::new();
            for (id, at) in events {
                self.check_id(*id)?;
                let local = at.with_timezone(&self.tz).naive_local();
                let period = Period::containing(finest, local);
                let group = match groups.entry(period) {
                    Entry::Occupied(g) => g.into_mut(),
                    Entry::Vacant(v) => {
                        let (keys, expiries) = self.mark_keys(event, at)?;
                        v.insert((keys, expiries, Vec::new()))
                    }
                };
                group.2.push(*id as i64);
            }
            let mut batch = Batch::new();
            let total = events.len() as u64;
            for (keys, expiries, ids) in groups.values() {
                for chunk in ids.chunks(IDS_PER_CALL) {
                    if self.hll {
                        let ids = chunk.iter().map(i64::to_string);
                        batch.script(self.hll_call(keys, expiries, true, ids)?);
                        continue;
                    }
                    let mut values = expiries.clone();
                    values.extend_from_slice(chunk);
                    batch.script(scripts::analytics::mark(keys, self.max_id as i64, &values));
                }
            }
            let hll = self.hll;
            Ok(Op::send(batch, move |replies| {
                let resent = replies.resent();
                let news: Vec<i64> = if hll {
                    let r: Vec<Vec<i64>> = replies.all()?;
                    r.iter().map(|r| r.get(1).copied().unwrap_or(0)).collect()
                } else {
                    replies.all()?
                };
                let n = news.iter().map(|n| n.max(&0)).sum::<i64>() as u64;
                Ok(changed_count(n, total, resent))
            }))
        })
    }

    /// Marks `id` in the unique event `event` (one bitmap, no time; with
    /// [`hll`](super::AnalyticsBuilder::hll) also in its HyperLogLog,
    /// [`Analytics::unique_hll_key`], in the same `analytics.mark_hll`
    /// call); `Some(true)` when it was not marked yet.
    pub fn mark_unique(&self, event: &str, id: u64) -> Op<Option<bool>> {
        checked(|| {
            check_event_name("event", event)?;
            self.check_id(id)?;
            let keys = [self.unique_key(event)];
            if self.hll {
                let call = self.hll_call(&keys, &[0], true, [id.to_string()])?;
                return Ok(Op::script_resent(call)
                    .map(|(r, resent)| changed(r.get(1) == Some(&1), resent)));
            }
            Ok(Op::script_resent(scripts::analytics::mark(
                &keys,
                self.max_id as i64,
                &[0, id as i64],
            ))
            .map(|(new, resent)| changed(new == 1, resent)))
        })
    }

    /// Refuses an id above the maximum with
    /// [`ErrorKind::UidOutOfRange`].
    pub(super) fn check_id(&self, id: u64) -> Result<()> {
        if id > self.max_id {
            return Err(ErrorKind::UidOutOfRange {
                detail: format!("id {id} is above the configured maximum {}", self.max_id),
            }
            .into());
        }
        Ok(())
    }

    /// The bitmaps of `event` for every configured period of `at`, finest
    /// first, and the `EXPIREAT` of each (0: kept).
    pub(super) fn mark_keys<Z: TimeZone>(
        &self,
        event: &str,
        at: &DateTime<Z>,
    ) -> Result<(Vec<String>, Vec<i64>)> {
        check_event_name("event", event)?;
        let local = at.with_timezone(&self.tz).naive_local();
        let mut keys = Vec::with_capacity(self.granularities.len());
        let mut expiries = Vec::with_capacity(self.granularities.len());
        for g in &self.granularities {
            let period = Period::containing(*g, local);
            keys.push(self.key(event, period));
            let end = self.instant(period.end()?)?;
            let expire = self.retention(*g).expire_at(end)?.unwrap_or(0);
            if expire > MAX_EXPIRE_AT {
                return Err(Error::invalid(
                    "at",
                    format!("{period} ends outside the unix time range"),
                ));
            }
            expiries.push(expire);
        }
        Ok((keys, expiries))
    }

    /// The unix second of local time `t` in the analytics' zone: the first
    /// valid local time at or after it when it falls in a gap, the earlier
    /// one when it is ambiguous.
    pub(super) fn instant(&self, t: NaiveDateTime) -> Result<i64> {
        // A gap lasts at most a few hours; step a minute at a time.
        for minute in 0..=24 * 60 {
            let local = t + chrono::TimeDelta::minutes(minute);
            match self.tz.from_local_datetime(&local) {
                LocalResult::Single(x) | LocalResult::Ambiguous(x, _) => return Ok(x.timestamp()),
                LocalResult::None => continue,
            }
        }
        Err(Error::invalid(
            "at",
            format!("{t}: the zone has no valid local time that day"),
        ))
    }
}
