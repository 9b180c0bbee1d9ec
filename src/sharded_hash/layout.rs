//! A sharded hash's layout stored with its data: the meta hash
//! `<base>:meta` (scheme, shard count or ids per shard, separator,
//! version), claimed once before the first write of a hash built with
//! [`record_layout`](super::ShardedHashBuilder::record_layout), read back by
//! [`ShardedHash::open`].
//!
//! The shards spread over cluster slots, so the meta key cannot be written
//! in the same script as the data: the first write of such a hash first
//! runs `layout.claim` (stores the layout if none is stored, answers the
//! stored one), and a hash with another layout is refused with
//! [`ErrorKind::LayoutMismatch`] before any shard is touched.

use super::{ShardedHash, Sharding};
use crate::core::Op;
use crate::error::ErrorKind;
use crate::layout::{self, Layout};

/// The version of the layout fields written in the meta key.
pub(crate) const LAYOUT_VERSION: u32 = 1;

/// What separates the base from the shard number in shard keys.
pub(crate) const SEPARATOR: &str = ":";

impl Sharding {
    /// The layout fields of this sharding.
    pub fn layout(&self) -> Layout {
        let l = Layout::new("sharded_hash", LAYOUT_VERSION).with("separator", SEPARATOR);
        match *self {
            Sharding::Crc32 { shards } => l.with("scheme", "crc32").with("shards", shards),
            Sharding::ById {
                fields_per_shard,
                max_id,
            } => l
                .with("scheme", "by_id")
                .with("fields_per_shard", fields_per_shard)
                .with("max_id", max_id),
        }
    }

    /// The sharding a stored layout describes, `None` when this version of
    /// the crate does not read it.
    pub fn from_layout(l: &Layout) -> Option<Sharding> {
        if l.pattern() != Some("sharded_hash")
            || l.get_u64("version") != Some(u64::from(LAYOUT_VERSION))
            || l.get("separator") != Some(SEPARATOR)
        {
            return None;
        }
        match l.get("scheme")? {
            "crc32" => Some(Sharding::Crc32 {
                shards: u32::try_from(l.get_u64("shards")?).ok()?,
            }),
            "by_id" => Some(Sharding::ById {
                fields_per_shard: l.get_u64("fields_per_shard")?,
                max_id: l.get_u64("max_id")?,
            }),
            _ => None,
        }
    }
}

impl ShardedHash {
    /// The meta key of the hash `base`: `<base>:meta`.
    pub fn meta_key_of(base: &str) -> String {
        layout::meta_key(base)
    }

    /// This hash's meta key: `<base>:meta`.
    pub fn meta_key(&self) -> String {
        Self::meta_key_of(&self.base)
    }

    /// The layout this hash writes and reads with.
    pub fn layout(&self) -> Layout {
        self.sharding.layout()
    }

    /// Whether this hash records its layout with the data.
    pub fn records_layout(&self) -> bool {
        self.claim.records()
    }

    /// Stores this hash's layout in its meta key unless one is stored
    /// (one `layout.claim` call); [`ErrorKind::LayoutMismatch`] when the
    /// stored one differs. Writes of a hash that records its layout run it
    /// once by themselves.
    pub fn claim_layout(&self) -> Op<()> {
        self.claim.claim(&self.meta_key(), &self.layout())
    }

    /// The sharding stored in the meta key of `base`, `None` when none is
    /// stored (data written without one).
    pub fn stored_sharding(base: &str) -> Op<Option<Sharding>> {
        layout::read_as(base, "sharded_hash", LAYOUT_VERSION, Sharding::from_layout)
    }

    /// The hash `base` with the layout stored with its data (strict, the
    /// default limits, recording its layout);
    /// [`ErrorKind::LayoutMissing`] when none is stored (name the layout
    /// with [`ShardedHash::builder`] for data written without one).
    pub fn open(base: &str) -> Op<ShardedHash> {
        let owned = base.to_string();
        Self::stored_sharding(base).try_map(move |sharding| {
            let sharding = sharding.ok_or_else(|| ErrorKind::LayoutMissing {
                key: Self::meta_key_of(&owned),
            })?;
            Self::builder(&owned, sharding).record_layout(true).build()
        })
    }

    /// `op`, after the layout claim when this hash records its layout and
    /// has not claimed it yet.
    pub(super) fn claimed<T: Send + 'static>(&self, op: Op<T>) -> Op<T> {
        self.claim.before(|| self.claim_layout(), op)
    }
}
