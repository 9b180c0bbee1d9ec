//! The head cache: the ring head each reply reported, per logical key, so
//! that the next add can guess which ring slots to pass.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

const HEAD_CACHE_SLOTS: usize = 1024;

/// A fixed-size cache of the ring head per logical key: `(tag << 32) | head`,
/// 0 = empty. Lossy by design; a wrong guess only costs one extra call.
#[derive(Debug)]
pub(crate) struct HeadCache {
    slots: Box<[AtomicU64]>,
}

impl HeadCache {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..HEAD_CACHE_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn locate(key: &str) -> (usize, u64) {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let h = h.finish();
        // A non-zero tag, so that an empty entry never matches.
        ((h as usize) % HEAD_CACHE_SLOTS, (h >> 32) | 1)
    }

    /// The head last stored for `key`, or slot 0 when unknown.
    pub(crate) fn guess(&self, key: &str) -> u32 {
        let (i, tag) = Self::locate(key);
        let v = self.slots[i].load(Ordering::Relaxed);
        if v >> 32 == tag { v as u32 } else { 0 }
    }

    pub(crate) fn store(&self, key: &str, head: u32) {
        let (i, tag) = Self::locate(key);
        self.slots[i].store((tag << 32) | head as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_cache_guesses_what_it_stored() {
        let c = HeadCache::new();
        assert_eq!(c.guess("a"), 0);
        c.store("a", 7);
        assert_eq!(c.guess("a"), 7);
        c.store("a", 0);
        assert_eq!(c.guess("a"), 0);
    }
}
