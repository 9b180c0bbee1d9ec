//! A packed store's layout stored with its data: the meta hash
//! `<base>:meta` (record width, ids per shard, version), claimed once
//! before the first write of a store built with
//! [`record_layout`](super::PackedRecordsBuilder::record_layout), read back
//! by [`PackedRecords::open`] and [`PackedRecords::stored_layout`].
//!
//! The shards spread over cluster slots, so the layout is claimed by its own
//! `layout.claim` call before the first write, and a store with another
//! width or shard length is refused with [`ErrorKind::LayoutMismatch`]
//! before any shard is touched.

use serde::Serialize;

use super::{Codec, PackedRecords};
use crate::core::Op;
use crate::error::ErrorKind;
use crate::layout::{self, Layout};

/// The version of the layout fields written in the meta key.
pub(crate) const LAYOUT_VERSION: u32 = 1;

/// Where a packed store's records are: their width and how many share a
/// shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PackedLayout {
    /// The record width W in bytes.
    pub width: u64,
    /// Records per shard string.
    pub ids_per_shard: u64,
}

impl PackedLayout {
    /// The layout fields.
    pub fn layout(&self) -> Layout {
        Layout::new("packed", LAYOUT_VERSION)
            .with("width", self.width)
            .with("ids_per_shard", self.ids_per_shard)
    }

    /// The width and shard length of a stored packed layout (its pattern
    /// and version checked by [`layout::read_as`]).
    fn from_layout(l: &Layout) -> Option<Self> {
        Some(Self {
            width: l.get_u64("width")?,
            ids_per_shard: l.get_u64("ids_per_shard")?,
        })
    }
}

impl<C: Codec> PackedRecords<C> {
    /// This store's meta key: `<base>:meta`.
    pub fn meta_key(&self) -> String {
        layout::meta_key(&self.base)
    }

    /// The layout this store writes and reads with.
    pub fn packed_layout(&self) -> PackedLayout {
        PackedLayout {
            width: self.width,
            ids_per_shard: self.ids_per_shard,
        }
    }

    /// Stores this store's layout in its meta key unless one is stored (one
    /// `layout.claim` call); [`ErrorKind::LayoutMismatch`] when the stored
    /// one differs. Writes of a store that records its layout run it once by
    /// themselves.
    pub fn claim_layout(&self) -> Op<()> {
        self.claim
            .claim(&self.meta_key(), &self.packed_layout().layout())
    }

    /// The layout stored in the meta key of `base`, `None` when none is
    /// stored (data written without one).
    pub fn stored_layout(base: &str) -> Op<Option<PackedLayout>> {
        layout::read_as(base, "packed", LAYOUT_VERSION, PackedLayout::from_layout)
    }

    /// The records of `codec` for ids `0..=max_id` under `base`, with the
    /// shard length stored with the data (recording its layout);
    /// [`ErrorKind::LayoutMissing`] when none is stored, and
    /// [`ErrorKind::LayoutMismatch`] when the stored width is not the
    /// codec's.
    pub fn open(base: &str, codec: C, max_id: u64) -> Op<PackedRecords<C>> {
        let owned = base.to_string();
        Self::stored_layout(base).try_map(move |stored| {
            let key = layout::meta_key(&owned);
            let stored = stored.ok_or_else(|| ErrorKind::LayoutMissing { key: key.clone() })?;
            let wanted = PackedLayout {
                width: codec.width() as u64,
                ids_per_shard: stored.ids_per_shard,
            };
            stored.layout().check(&key, &wanted.layout())?;
            Self::builder(&owned, codec, max_id)
                .ids_per_shard(stored.ids_per_shard)
                .record_layout(true)
                .build()
        })
    }

    /// `op`, after the layout claim when this store records its layout and
    /// has not claimed it yet.
    pub(super) fn claimed<T: Send + 'static>(&self, op: Op<T>) -> Op<T> {
        self.claim.before(|| self.claim_layout(), op)
    }
}
