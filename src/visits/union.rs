//! The multi-day union: the exact number of distinct members over several
//! days, unioned client-side shard index by shard index, one batch of
//! `SMEMBERS` per chunk of shard indices.

use std::collections::HashSet;

use chrono::{NaiveDate, TimeZone};

use super::counter::VisitCounter;
use crate::core::{Batch, Env, Machine, Op, Replies, Step};
use crate::error::{Error, Result};

/// About how many shard sets one chunk of the union fetches (every day's
/// shard of a few shard indices): the bound on client memory.
const UNION_SETS: usize = 512;

/// The longest range [`VisitCounter::distinct_between`] accepts.
const MAX_RANGE_DAYS: usize = 3660;

/// The union as a step machine: each step sends the next chunk's
/// `SMEMBERS` in one batch and adds the chunk's union sizes to the total.
struct Union {
    /// The day tags, one per distinct day.
    tags: Vec<String>,
    shards: u32,
    /// The first shard index of the next chunk.
    next: u32,
    /// Shard indices per chunk.
    per_chunk: u32,
    total: u64,
}

impl Union {
    /// The sum over shard indices of the size of the union across days, from
    /// the replies of one chunk (every day's set of one index, then the next
    /// index).
    fn chunk_size(&self, mut replies: Replies) -> Result<u64> {
        let mut size = 0u64;
        let mut union: HashSet<i64> = HashSet::new();
        while !replies.is_empty() {
            union.clear();
            for _ in 0..self.tags.len() {
                union.extend(replies.take::<Vec<i64>>()?);
            }
            size += union.len() as u64;
        }
        Ok(size)
    }
}

impl Machine for Union {
    type Output = u64;

    fn step(&mut self, _: &Env, replies: Option<Replies>) -> Result<Step<u64>> {
        if let Some(replies) = replies {
            self.total += self.chunk_size(replies)?;
        }
        if self.next >= self.shards {
            return Ok(Step::Done(self.total));
        }
        let to = self.next.saturating_add(self.per_chunk).min(self.shards);
        let mut batch = Batch::with_capacity((to - self.next) as usize * self.tags.len());
        for i in self.next..to {
            for tag in &self.tags {
                let key = format!("{tag}:{i}");
                let mut cmd = redis::cmd("SMEMBERS");
                cmd.arg(&key);
                batch.add(key, cmd);
            }
        }
        self.next = to;
        Ok(Step::Send(batch))
    }
}

impl<Tz: TimeZone> VisitCounter<Tz> {
    /// The exact number of distinct members over `days` (duplicates
    /// ignored), unioned client-side shard index by shard index (see the
    /// module docs): one batch per chunk of about 512 shard sets, so a small
    /// number of round trips and memory bounded by one chunk. One day is
    /// its count.
    pub fn distinct_over(&self, days: &[NaiveDate]) -> Op<u64> {
        if days.is_empty() {
            return Op::fail(Error::invalid("days", "must not be empty"));
        }
        let mut days = days.to_vec();
        days.sort();
        days.dedup();
        if days.len() == 1 {
            return self.count(days[0]);
        }
        let per_chunk = (UNION_SETS / days.len()).max(1) as u32;
        Op::from_machine(Union {
            tags: days.iter().map(|&d| self.day_tag(d)).collect(),
            shards: self.shards,
            next: 0,
            per_chunk,
            total: 0,
        })
    }

    /// [`VisitCounter::distinct_over`] every day from `from` to `to`
    /// inclusive (at most 3660 days); a reversed range is refused.
    pub fn distinct_between(&self, from: NaiveDate, to: NaiveDate) -> Op<u64> {
        if from > to {
            return Op::fail(Error::invalid(
                "day range",
                format!("reversed: {from} is after {to}"),
            ));
        }
        let days: Vec<NaiveDate> = from
            .iter_days()
            .take_while(|d| *d <= to)
            .take(MAX_RANGE_DAYS + 1)
            .collect();
        if days.len() > MAX_RANGE_DAYS {
            return Op::fail(Error::invalid(
                "day range",
                format!("must span at most {MAX_RANGE_DAYS} days"),
            ));
        }
        self.distinct_over(&days)
    }
}
