//! Reading a rolling store's ring layout from its index hash (`shards`,
//! `shard_size`, which every script checks), so a reader needs not be told
//! the `limit` and `shard_size` the writers used.

use std::time::Duration;

use super::store::RollingStore;
use crate::core::Op;
use crate::error::Result;
use crate::keys::{self, Prefix};

/// A ring layout as stored in an index: ring slots and records per shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RingLayout {
    /// Ring slots (shards).
    pub shards: u32,
    /// Records per shard.
    pub shard_size: u64,
}

impl RingLayout {
    /// The store this ring belongs to: `limit = (shards - 1) * shard_size`
    /// (the ring size `ceil(limit / shard_size) + 1` is the stored one), with
    /// `ttl` for its writes.
    pub fn store(&self, prefix: Prefix, ttl: Duration) -> Result<RollingStore> {
        let limit = u64::from(self.shards.saturating_sub(1)).max(1) * self.shard_size;
        RollingStore::builder(limit, self.shard_size, ttl)
            .prefix(prefix)
            .build()
    }
}

impl RollingStore {
    /// The ring layout stored in the index of logical key `key` under
    /// `prefix` (`HMGET shards shard_size`), `None` when it has none (no
    /// records, or they expired).
    pub fn stored_ring(prefix: &Prefix, key: &str) -> Op<Option<RingLayout>> {
        if let Err(e) = keys::check_name("key", key) {
            return Op::fail(e);
        }
        let meta = prefix.tagged(key);
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(&meta).arg("shards").arg("shard_size");
        Op::<(Option<u32>, Option<u64>)>::cmd(meta, cmd).map(|(shards, shard_size)| {
            Some(RingLayout {
                shards: shards?,
                shard_size: shard_size?,
            })
        })
    }
}
