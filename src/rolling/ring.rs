//! The ring of one logical key: its index (meta) key and the (hash, order)
//! keys of its slots, all under the key's hash tag.

/// The keys of one logical key's ring of `shards` slots.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    /// `<prefix>{<key>}`: the index hash; every other key starts with it.
    pub(crate) meta: String,
    pub(crate) shards: u32,
}

impl Ring {
    /// The shard hash of `slot`.
    pub(crate) fn hash(&self, slot: u32) -> String {
        format!("{}:{slot}", self.meta)
    }

    /// The order list of `slot`.
    pub(crate) fn order(&self, slot: u32) -> String {
        format!("{}:{slot}:order", self.meta)
    }

    /// Every shard hash, slot 0 first.
    pub(crate) fn hashes(&self) -> Vec<String> {
        (0..self.shards).map(|s| self.hash(s)).collect()
    }

    /// Every order list, slot 0 first.
    pub(crate) fn orders(&self) -> Vec<String> {
        (0..self.shards).map(|s| self.order(s)).collect()
    }

    /// (hash, order) keys of `count` consecutive slots from `first`,
    /// wrapping around the ring.
    pub(crate) fn window(&self, first: u32, count: u32) -> Vec<String> {
        let mut out = Vec::with_capacity(2 * count as usize);
        for i in 0..count {
            let slot = (first + i) % self.shards;
            out.push(self.hash(slot));
            out.push(self.order(slot));
        }
        out
    }

    /// (hash, order) keys of every slot, slot 0 first.
    pub(crate) fn all_slots(&self) -> Vec<String> {
        self.window(0, self.shards)
    }
}
