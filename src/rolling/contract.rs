//! The rolling store's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::add::WINDOWS;
use super::{DEFAULT_INDEX_MARGIN, DEFAULT_PREFIX, MAX_SHARDS, MAX_TTL_MS};
use crate::contract::parts::{
    KeyTemplate, PatternContract, Protocol, constant, function, key, param, prefix_param, protocol,
    required_param,
};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        params: vec![
            prefix_param(DEFAULT_PREFIX),
            required_param(
                "limit",
                "integer",
                "the newest limit records of a key are always kept (until they expire); at least shard_size",
            ),
            required_param("shard_size", "integer", "records per shard, at least 1"),
            required_param(
                "ttl_ms",
                "integer",
                "shard TTL in ms, reset on every write to the shard, 1 to max_ttl_ms",
            ),
            param(
                "index_margin_ms",
                "integer",
                json!(DEFAULT_INDEX_MARGIN.as_millis() as u64),
                "how much longer than the shards the index lives; ttl_ms + index_margin_ms <= max_ttl_ms",
            ),
        ],
        keys: keys(),
        constants: vec![
            constant(
                "windows",
                json!(WINDOWS),
                "ring slots passed per add attempt after 0, 1, 2 misses; then the whole ring",
            ),
            constant("max_shards", MAX_SHARDS, "the largest ring"),
            constant(
                "max_ttl_ms",
                MAX_TTL_MS,
                "the longest TTL the scripts accept",
            ),
        ],
        functions: vec![
            function(
                "shards",
                "shards(limit, shard_size) -> integer",
                &["ceil(limit / shard_size) + 1 (at most max_shards)"],
            ),
            function(
                "window",
                "window(key, first, count) -> keys",
                &[
                    "for i in 0..count: slot = (first + i) mod shards; slot_hash(slot), slot_order(slot) (hash, order, hash, order, ...)",
                ],
            ),
            function(
                "ring",
                "ring(key) -> keys",
                &["window(key, 0, shards): every slot, slot 0 first"],
            ),
        ],
        protocols: protocols(),
        ..PatternContract::of(
            "rolling",
            "bounded, expiring, sharded store of the newest records of each logical key, in a fixed ring of hash shards",
            include_str!("client.api"),
        )
    }
}

/// The keys of the rolling store.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "meta",
            "<prefix>{<key>}",
            "hash",
            "the index: head (ring slot being filled), gen (its generation), shards, shard_size; TTL ttl_ms + index_margin_ms",
        ),
        key(
            "slot_hash",
            "<prefix>{<key>}:<slot>",
            "hash",
            "ring slot <slot> (0 to shards-1): field -> record",
        ),
        key(
            "slot_order",
            "<prefix>{<key>}:<slot>:order",
            "list",
            "the slot's fields in insertion order",
        ),
    ]
}

/// The protocols of the rolling store.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "add",
            &["rolling.add"],
            &[
                "guess = the head the last reply for this key reported (0 when unknown); attempt = 0",
                "if attempt < len(windows) and windows[attempt] < shards: first = guess, count = windows[attempt]; else first = 0, count = shards",
                "reply = rolling.add(meta, window(key, first, count), first, shards, shard_size, field, value, ttl_ms, ttl_ms + index_margin_ms) = {status, head, gen, evicted}",
                "remember head for the key; status 1: added, 2: replaced in the head shard; done",
                "status 0 (head moved, retry): the head is not among the slots passed and nothing was written: guess = head, attempt += 1,",
                "and send again; after len(windows) + 1 calls that all answered 0 give up (the whole ring cannot miss)",
            ],
        ),
        protocol(
            "reads",
            &[
                "rolling.get",
                "rolling.recent",
                "rolling.len",
                "rolling.clear",
            ],
            &[
                "get(field): rolling.get(meta, every slot_hash slot 0 first, field) -> the newest value or nil",
                "recent(n): rolling.recent(meta, ring(key), min(n, shards * shard_size)) -> field, value, ... newest first",
                "len: rolling.len(meta, every slot_hash); clear: rolling.clear(meta, ring(key)) -> fields deleted",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::rolling::RollingStore;

    #[test]
    fn templates_render_the_keys_the_store_uses() {
        let c = contract();
        let store = RollingStore::new(25, 10, Duration::from_secs(60)).unwrap();
        assert_eq!(store.shards() as u64, 25u64.div_ceil(10) + 1);
        let vars = |slot: &str| {
            [
                ("prefix", DEFAULT_PREFIX),
                ("key", "merchant:42"),
                ("slot", slot),
            ]
            .map(|(a, b)| (a, b.to_string()))
        };
        let r = |t: &str, slot: &str| {
            let v = vars(slot);
            let v: Vec<(&str, &str)> = v.iter().map(|(a, b)| (*a, b.as_str())).collect();
            KeyTemplate::render(t, &v)
        };
        assert_eq!(
            r(&c.keys[0].template, "0"),
            store.meta_key("merchant:42").unwrap()
        );
        let hashes = store.shard_keys("merchant:42").unwrap();
        let orders = store.order_keys("merchant:42").unwrap();
        for slot in 0..store.shards() as usize {
            assert_eq!(r(&c.keys[1].template, &slot.to_string()), hashes[slot]);
            assert_eq!(r(&c.keys[2].template, &slot.to_string()), orders[slot]);
        }
    }
}
