//! Whole-map work, shard by shard: the live entries ([`ExpiringMap::entries`]),
//! the bounded, resumable sweep ([`ExpiringMap::sweep`]), the length and
//! the shards' encodings.

use serde::Serialize;

use super::{ExpiringMap, Path, native, portable};
use crate::core::{Batch, Op};
use crate::error::{Error, Result};
use crate::sharded_hash::{Health, ShardedHash, Sharding};

/// One live entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The field.
    pub field: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// When it expires (unix milliseconds); `None`: never.
    pub expires_at_ms: Option<u64>,
}

/// A page of [`ExpiringMap::entries`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntriesPage {
    /// The live entries of the shards read, shard by shard.
    pub entries: Vec<Entry>,
    /// The shard to start the next page at; `None` after the last shard.
    pub next: Option<u64>,
}

/// What one [`ExpiringMap::sweep`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Shards swept.
    pub shards: u64,
    /// Expired entries removed (native path: 0, the server removes them).
    pub removed: u64,
    /// Live entries left in the shards swept.
    pub live: u64,
    /// The shard to start the next call at; `None` after the last shard.
    pub next: Option<u64>,
}

impl ExpiringMap {
    /// The shards `from .. from + count` (within the map) and the next start.
    fn range(&self, from: u64, count: u64) -> Result<(std::ops::Range<u64>, Option<u64>)> {
        if count == 0 {
            return Err(Error::invalid("count", "must be at least 1"));
        }
        if from >= self.shards() {
            return Err(Error::invalid(
                "from",
                format!("must be a shard below {}", self.shards()),
            ));
        }
        let end = from.saturating_add(count).min(self.shards());
        Ok((from..end, (end < self.shards()).then_some(end)))
    }

    /// Removes the expired entries of the `count` shards from shard `from`
    /// (one script per shard, one batch: each shard at most its listpack
    /// limit of fields, so a call's work is bounded by `count`); resume at
    /// [`SweepReport::next`]. On the native path the server removes expired
    /// fields itself and this counts the live ones.
    pub fn sweep(&self, from: u64, count: u64) -> Op<SweepReport> {
        let (range, next) = match self.range(from, count) {
            Ok(r) => r,
            Err(e) => return Op::fail(e),
        };
        let mut batch = Batch::with_capacity(range.clone().count());
        for s in range.clone() {
            let key = self.key_of_shard(s);
            match self.path {
                Path::Portable => portable::sweep(&mut batch, &key),
                Path::Native => native::sweep(&mut batch, &key),
            }
        }
        let path = self.path;
        let shards = range.end - range.start;
        self.on_path(move || {
            Op::send(batch, move |replies| {
                let mut r = SweepReport {
                    shards,
                    next,
                    ..SweepReport::default()
                };
                match path {
                    Path::Portable => {
                        for v in replies.all::<Vec<u64>>()? {
                            r.removed += v.first().copied().unwrap_or(0);
                            r.live += v.get(1).copied().unwrap_or(0);
                        }
                    }
                    Path::Native => {
                        r.live = replies
                            .all::<Vec<redis::Value>>()?
                            .iter()
                            .map(|k| k.len() as u64)
                            .sum()
                    }
                }
                Ok(r)
            })
        })
    }

    /// The live entries of the `count` shards from shard `from`, with their
    /// expiries (one call per shard, one batch; native: then `HPEXPIRETIME`
    /// of what was read); resume at [`EntriesPage::next`].
    pub fn entries(&self, from: u64, count: u64) -> Op<EntriesPage> {
        let (range, next) = match self.range(from, count) {
            Ok(r) => r,
            Err(e) => return Op::fail(e),
        };
        let keys: Vec<String> = range.map(|s| self.key_of_shard(s)).collect();
        let mut batch = Batch::with_capacity(keys.len());
        for key in &keys {
            match self.path {
                Path::Portable => portable::entries(&mut batch, key),
                Path::Native => {
                    let mut cmd = redis::cmd("HGETALL");
                    cmd.arg(key);
                    batch.add(key, cmd);
                }
            }
        }
        let path = self.path;
        self.on_path(move || {
            let read = Op::send(batch, move |replies| Ok(replies.into_values()));
            read.and_then(move |values| match path {
                Path::Portable => Op::from_result(
                    values
                        .into_iter()
                        .map(portable::decode_entries)
                        .collect::<Result<Vec<_>>>()
                        .map(|pages| EntriesPage {
                            entries: pages.into_iter().flatten().collect(),
                            next,
                        }),
                ),
                Path::Native => native::with_expiries(keys, values, next),
            })
        })
    }

    /// The same shards as a non-strict sharded hash (for `HLEN` and
    /// `OBJECT ENCODING`).
    fn as_hash(&self) -> ShardedHash {
        ShardedHash::builder(
            &self.base,
            Sharding::Crc32 {
                shards: self.shards,
            },
        )
        .strict(false)
        .build()
        .expect("the map's base and shard count were checked")
    }

    /// The number of fields: `HLEN` of every shard, one batch. **It counts
    /// entries that have expired but are not removed yet** (see
    /// [`ExpiringMap::sweep`], whose report counts the live ones).
    pub fn len(&self) -> Op<u64> {
        self.as_hash().len()
    }

    /// Whether the map holds no field (expired ones count, as for
    /// [`ExpiringMap::len`]).
    pub fn is_empty(&self) -> Op<bool> {
        self.len().map(|n| n == 0)
    }

    /// `OBJECT ENCODING` and `HLEN` of up to `sample` shards spread evenly:
    /// how many converted out of listpack (the native path's `listpackex`
    /// counts as listpack; Valkey's field TTLs make `hashtable`).
    pub fn inspect(&self, sample: u64) -> Op<Health> {
        self.as_hash().inspect(sample)
    }
}
