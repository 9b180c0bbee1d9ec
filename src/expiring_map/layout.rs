//! An expiring map's layout stored with its data: the meta hash
//! `<base>:meta` (scheme, shard count, separator, **path**, version),
//! claimed once before the first write of a map built with
//! [`record_layout`](super::ExpiringMapBuilder::record_layout) (as
//! [`ExpiringMap::planned`] builds it), read back by [`ExpiringMap::open`].
//!
//! The path is part of the layout because data written on one path cannot
//! be read on the other: a portable entry's value starts with its expiry, a
//! native entry's does not. So a map planned on one server and opened on
//! another (or by another client) keeps the path it was written on, and a
//! writer that asks for the other path is refused with
//! [`ErrorKind::LayoutMismatch`] before any shard is touched.

use super::{ExpiringMap, Path};
use crate::core::Op;
use crate::error::ErrorKind;
use crate::layout::{self, Layout};

/// The version of the layout fields written in the meta key.
pub(crate) const LAYOUT_VERSION: u32 = 1;

/// What separates the base from the shard number in shard keys.
const SEPARATOR: &str = ":";

/// The shard count and path of a stored expiring_map layout (its pattern
/// and version checked by [`layout::read_as`]), `None` when this version of
/// the crate does not read it.
fn from_layout(l: &Layout) -> Option<(u32, Path)> {
    if l.get("separator") != Some(SEPARATOR) || l.get("scheme") != Some("crc32") {
        return None;
    }
    let shards = u32::try_from(l.get_u64("shards")?).ok()?;
    let path = match l.get("path")? {
        "portable" => Path::Portable,
        "native" => Path::Native,
        _ => return None,
    };
    (shards > 0).then_some((shards, path))
}

/// The layout fields of a map of `shards` shards on `path`.
pub(super) fn layout_of(shards: u32, path: Path) -> Layout {
    Layout::new("expiring_map", LAYOUT_VERSION)
        .with("scheme", "crc32")
        .with("separator", SEPARATOR)
        .with("shards", shards)
        .with("path", path.name())
}

impl ExpiringMap {
    /// The meta key of the map `base`: `<base>:meta`.
    pub fn meta_key_of(base: &str) -> String {
        layout::meta_key(base)
    }

    /// This map's meta key: `<base>:meta`.
    pub fn meta_key(&self) -> String {
        Self::meta_key_of(&self.base)
    }

    /// The layout this map writes and reads with.
    pub fn layout(&self) -> Layout {
        layout_of(self.shards, self.path)
    }

    /// Whether this map records its layout with the data.
    pub fn records_layout(&self) -> bool {
        self.claim.records()
    }

    /// Stores this map's layout in its meta key unless one is stored (one
    /// `layout.claim` call); [`ErrorKind::LayoutMismatch`] when the stored
    /// one differs. Writes of a map that records its layout run it once by
    /// themselves.
    pub fn claim_layout(&self) -> Op<()> {
        self.claim.claim(&self.meta_key(), &self.layout())
    }

    /// The shard count and path stored in the meta key of `base`, `None`
    /// when none is stored (data written without one).
    pub fn stored_layout(base: &str) -> Op<Option<(u32, Path)>> {
        layout::read_as(base, "expiring_map", LAYOUT_VERSION, from_layout)
    }

    /// The map `base` with the layout stored with its data (its shards and
    /// path; no cap, no max-idle, the default limits, recording its
    /// layout); [`ErrorKind::LayoutMissing`] when none is stored (name the
    /// layout with [`ExpiringMap::builder`] for data written without one).
    pub fn open(base: &str) -> Op<ExpiringMap> {
        let owned = base.to_string();
        Self::stored_layout(base).try_map(move |stored| {
            let (shards, path) = stored.ok_or_else(|| ErrorKind::LayoutMissing {
                key: Self::meta_key_of(&owned),
            })?;
            Self::builder(&owned, shards)
                .path(path)
                .record_layout(true)
                .build()
        })
    }

    /// `op`, after the layout claim when this map records its layout and
    /// has not claimed it yet.
    pub(super) fn claimed<T: Send + 'static>(&self, op: Op<T>) -> Op<T> {
        self.claim.before(|| self.claim_layout(), op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_reads_back_its_shards_and_path() {
        for path in [Path::Portable, Path::Native] {
            assert_eq!(from_layout(&layout_of(64, path)), Some((64, path)));
        }
        let odd = layout_of(64, Path::Native).with("path", "elsewhere");
        assert_eq!(from_layout(&odd), None);
        assert_eq!(from_layout(&layout_of(0, Path::Portable)), None);
    }
}
