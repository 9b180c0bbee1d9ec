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

use std::sync::atomic::Ordering;

use serde::Serialize;

use super::{Codec, PackedRecords};
use crate::core::Op;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{self, Layout};

/// The version of the layout fields written in the meta key.
pub const LAYOUT_VERSION: u32 = 1;

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

    fn from_layout(key: &str, l: &Layout) -> Result<Self> {
        let read = || {
            if l.pattern() != Some("packed")
                || l.get_u64("version") != Some(u64::from(LAYOUT_VERSION))
            {
                return None;
            }
            Some(Self {
                width: l.get_u64("width")?,
                ids_per_shard: l.get_u64("ids_per_shard")?,
            })
        };
        read().ok_or_else(|| {
            ErrorKind::LayoutMismatch {
                key: key.to_string(),
                stored: l.to_string(),
                requested: format!("a packed layout of version {LAYOUT_VERSION}"),
            }
            .into()
        })
    }
}

/// The meta key of the store `base`: `<base>:meta`.
fn meta_key_of(base: &str) -> String {
    format!("{base}:meta")
}

impl<C: Codec> PackedRecords<C> {
    /// This store's meta key: `<base>:meta`.
    pub fn meta_key(&self) -> String {
        meta_key_of(&self.base)
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
        let flag = self.claimed.clone();
        layout::claim(&self.meta_key(), &self.packed_layout().layout()).map(move |()| {
            if let Some(flag) = flag {
                flag.store(true, Ordering::Relaxed);
            }
        })
    }

    /// The layout stored in the meta key of `base`, `None` when none is
    /// stored (data written without one).
    pub fn stored_layout(base: &str) -> Op<Option<PackedLayout>> {
        if base.is_empty() {
            return Op::fail(Error::invalid("base", "must not be empty"));
        }
        let key = meta_key_of(base);
        layout::read(&key).try_map(move |stored| {
            stored
                .map(|l| PackedLayout::from_layout(&key, &l))
                .transpose()
        })
    }

    /// The records of `codec` for ids `0..=max_id` under `base`, with the
    /// shard length stored with the data (recording its layout);
    /// [`ErrorKind::LayoutMissing`] when none is stored, and
    /// [`ErrorKind::LayoutMismatch`] when the stored width is not the
    /// codec's.
    pub fn open(base: &str, codec: C, max_id: u64) -> Op<PackedRecords<C>> {
        let owned = base.to_string();
        Self::stored_layout(base).try_map(move |stored| {
            let key = meta_key_of(&owned);
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
        match &self.claimed {
            Some(flag) if !flag.load(Ordering::Relaxed) => {
                self.claim_layout().and_then(move |()| op)
            }
            _ => op,
        }
    }
}
