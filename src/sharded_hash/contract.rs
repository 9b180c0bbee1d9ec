//! The sharded hash's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::ListpackLimits;
use crate::contract::parts::*;

pattern_contract! {
    "sharded_hash", "a logical hash stored as small listpack-encoded hash shards";
    params, keys, functions, protocols
}

/// The hash's parameters: its base and separator, the shard layout, strictness and the listpack limits.
fn params() -> Vec<Param> {
    vec![
        base_param("the logical hash's name"),
        param(
            "separator",
            "string",
            json!(super::DEFAULT_SEPARATOR),
            "what joins base and shard id in a shard key, not empty, no '{' or '}' (\"_\" is the PHP recipe's shardKey: <base>_<shard>)",
        ),
        required_param(
            "shards",
            "integer",
            "crc32 sharding: the number of shards, at least 1",
        ),
        required_param(
            "fields_per_shard",
            "integer",
            "id sharding (instead of shards): fields per shard, at least 1",
        ),
        required_param(
            "max_id",
            "integer",
            "id sharding: the largest id",
        ),
        param(
            "strict",
            "bool",
            json!(true),
            "refuse fields and values longer than max_value before sending, and write through the scripts that refuse to pass max_entries",
        ),
    ]
    .into_iter()
    .chain(listpack_params(""))
    .collect()
}

/// The listpack limits the shards stay under (`max_entries`, `max_value`,
/// with the server's defaults); `value_note` ends the value's meaning (a
/// pattern's own margin) unless empty.
pub(crate) fn listpack_params(value_note: &str) -> [Param; 2] {
    let value = "the server's hash-max-listpack-value (bytes)";
    [
        param(
            "max_entries",
            "integer",
            json!(ListpackLimits::DEFAULT.entries),
            "the server's hash-max-listpack-entries",
        ),
        param(
            "max_value",
            "integer",
            json!(ListpackLimits::DEFAULT.value),
            &if value_note.is_empty() {
                value.to_string()
            } else {
                format!("{value}; {value_note}")
            },
        ),
    ]
}

/// A hash shard's key of `template` (`<base>:<shard>`): no hash tag, so
/// shards spread over a cluster.
pub(crate) fn shard_key(template: &str) -> KeyTemplate {
    key(
        "shard",
        template,
        "hash",
        "shard <shard>; no hash tag, so shards spread over a cluster",
    )
}

/// The hash's keys: its shards, an import's request key, its layout.
fn keys() -> Vec<KeyTemplate> {
    vec![
        shard_key("<base><separator><shard>"),
        key(
            "request",
            "{<base><separator><shard>}:req:<request_id>",
            "string",
            "the result of one increment with a request id, for its time to live, in the shard's slot (request_key)",
        ),
        crate::layout::meta_key_template(
            "pattern, version, scheme, shards or fields_per_shard and max_id, separator",
        ),
    ]
}

/// The computations every client does: the shard of a field.
fn functions() -> Vec<Function> {
    vec![
        shared::crc32(),
        shared::request_key(),
        function(
            "shard_of",
            "shard_of(field: bytes) -> integer",
            &[
                "crc32 sharding: crc32(field) mod shards",
                "id sharding: the field is a canonical decimal id (no sign, no leading zeros) from 0 to max_id; id / fields_per_shard (integer division)",
            ],
        ),
    ]
}

/// How each operation runs: the recorded layout, writes and reads.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "record_layout",
            &["layout.claim"],
            &[
                "before a hash's first write: layout.claim(<base>:meta, pattern sharded_hash, version 1, scheme crc32, shards N, separator :)",
                "(scheme by_id: fields_per_shard and max_id instead of shards); a stored layout that differs refuses every write",
            ],
        ),
        protocol(
            "write",
            &[
                "sharded_hash.put",
                "sharded_hash.incr",
                "HSET",
                "HSETNX",
                "HINCRBY",
            ],
            &[
                "strict: a field or value longer than max_value is refused before sending (writing it would convert the shard)",
                "set / set_if_absent of pairs: group by shard_of; strict: one sharded_hash.put(shard, only_absent, max_entries, field, value, ...) per shard",
                "(FULL: that shard's part was refused, nothing written to it); not strict: HSET (HSETNX per pair for set_if_absent)",
                "incr: strict sharded_hash.incr(shard, request_key(shard) without id, field, delta, max_entries, 0), else HINCRBY;",
                "not idempotent: after a lost reply its outcome is unknown",
                "incr_once(field, delta, request_id): sharded_hash.incr(shard, request_key(shard, request_id), field, delta,",
                "max_entries (0 when not strict), request_ttl_ms): a call with the same request returns the first result",
                "without adding again, so it may be sent again after a lost reply",
            ],
        ),
        protocol(
            "read",
            &["HGET", "HMGET", "HDEL", "HEXISTS", "HLEN"],
            &[
                "get: HGET shard_of(field)'s key; get_many: one HMGET per shard touched; len: HLEN of every shard, summed",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::sharded_hash::ShardedHash;

    #[test]
    fn templates_render_the_keys_the_hash_uses() {
        let c = contract();
        let h = ShardedHash::new("users", 64).unwrap();
        let shard = (crc32fast::hash(b"alice") % 64).to_string();
        let vars = |base, sep, shard| [("base", base), ("separator", sep), ("shard", shard)];
        assert_eq!(
            KeyTemplate::render(&c.keys[0].template, &vars("users", ":", &shard)),
            h.shard_key(b"alice").unwrap()
        );
        let ids = ShardedHash::by_id("ids", 100, 10_000).unwrap();
        assert_eq!(
            KeyTemplate::render(&c.keys[0].template, &vars("ids", ":", "12")),
            ids.shard_key(b"1234").unwrap()
        );
        let php =
            ShardedHash::builder("users", crate::sharded_hash::Sharding::Crc32 { shards: 64 })
                .separator("_")
                .build()
                .unwrap();
        assert_eq!(
            KeyTemplate::render(&c.keys[0].template, &vars("users", "_", &shard)),
            php.shard_key(b"alice").unwrap()
        );
    }
}
