//! The expiring map's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use crate::contract::parts::*;
use crate::sharded_hash::{listpack_params, shard_key};

pattern_contract! {
    "expiring_map", "entries with a time to live and a max-idle time on small listpack-encoded hash shards";
    params, keys, constants, functions, protocols
}

/// The map's parameters: its name, shards, path, cap, max-idle and the listpack limits.
fn params() -> Vec<Param> {
    vec![
        base_param("the logical map's name"),
        required_param(
            "shards",
            "integer",
            "the number of shards, at least 1",
        ),
        param(
            "path",
            "string",
            json!("portable"),
            "portable (the expiry in the entry) or native (per-field TTL; servers with hash_field_ttl and hash_getex); data is read on the path it was written on",
        ),
        param(
            "cap",
            "integer",
            json!(0),
            "portable: at most this many entries per shard, 0 for none",
        ),
        param(
            "max_idle_ms",
            "integer",
            json!(0),
            "a read of a live entry with less than max_idle_ms - floor(max_idle_ms / 16) left pushes its expiry to max_idle_ms ahead (an entry read at least every 15/16 of it stays); 0 for none",
        ),
    ]
    .into_iter()
    .chain(listpack_params("portable: a value may be 6 bytes shorter"))
    .collect()
}

/// The map's keys: its shards, the planner's probe and its layout.
fn keys() -> Vec<KeyTemplate> {
    vec![
        shard_key("<base>:<shard>"),
        key(
            "probe",
            "<base>:probe",
            "hash",
            "the planner's probe hash, written and deleted in one batch",
        ),
        crate::layout::meta_key_template(
            "pattern expiring_map, version, scheme crc32, shards, separator, path",
        ),
    ]
}

/// The capabilities the native path needs.
pub(super) const NATIVE_NEEDS: [&str; 2] = ["hash_field_ttl", "hash_getex"];

/// The refusal of the native path on a server without per-field TTLs (of
/// the argument `path`).
pub(crate) const NATIVE_REFUSAL: &str =
    "native needs per-field TTLs (hash_field_ttl and hash_getex), which this server lacks";

fn constants() -> Vec<Constant> {
    vec![
        constant(
            "native_needs",
            NATIVE_NEEDS.to_vec(),
            "the capabilities the native path needs",
        ),
        constant(
            "native_probe",
            vec!["HPTTL", "HGETEX"],
            "how a client learns the server has them: <cmd> <shard 0> FIELDS 1 probe of each, one batch, once per map (both read only); an unknown-command error: it lacks them (the Rust crate reads its detected capabilities)",
        ),
        constant(
            "native_refusal",
            NATIVE_REFUSAL,
            "the reason of the InvalidArgument (path) a native map's operations raise, sending nothing else, on a server without them",
        ),
    ]
}

/// The computations every client does: the shard of a field, the stored value of the portable path.
fn functions() -> Vec<Function> {
    vec![
        shared::crc32(),
        function(
            "shard_of",
            "shard_of(field: bytes) -> integer",
            &["crc32(field) mod shards"],
        ),
        function(
            "stored_value",
            "stored_value(expires_at_ms: integer, value: bytes) -> bytes",
            &[
                "portable: 6 bytes big-endian of expires_at_ms (unix milliseconds, 0 for none), then the value;",
                "an entry is live when its expiry is 0 or later than the server's TIME; a stored value shorter than 6 bytes reads as expired",
            ],
        ),
    ]
}

/// How each operation runs on the portable and the native path, and how the path is chosen.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "record_layout",
            &["layout.claim", "HGETALL"],
            &[
                "before a map's first write: layout.claim(<base>:meta, pattern expiring_map, version 1, scheme crc32, separator :, shards N, path portable|native);",
                "a stored layout that differs refuses every write; open(base): HGETALL <base>:meta gives the shards and the path (data is read on the path it was written on);",
                "planned(base, expected) takes a stored layout over its own plan and choice",
            ],
        ),
        protocol(
            "portable",
            &[
                "expiring_map.put",
                "expiring_map.get",
                "expiring_map.remove",
                "expiring_map.ttl",
                "expiring_map.expire",
                "expiring_map.sweep",
                "expiring_map.entries",
                "HLEN",
                "HMGET",
                "TIME",
            ],
            &[
                "put_many(pairs, ttl_ms): group by shard_of; one expiring_map.put(shard, only_absent, ttl_ms, max_entries, cap, field, value, ...) per shard",
                "get_many(fields): one expiring_map.get(shard, max_idle_ms, field, ...) per shard; nil for absent or expired",
                "(the Rust crate sends HMGET shard field ... then TIME to the same node instead, and keeps a value whose 6-byte expiry is 0 or later than TIME; with max_idle_ms it calls expiring_map.get afterwards only for a shard with a live entry due for a push, expiry sooner than TIME + max_idle_ms - floor(max_idle_ms / 16), and takes that shard's values from it)",
                "remove: expiring_map.remove; ttl_of: expiring_map.ttl (-2 absent, -1 persistent, else ms); persist / expire: expiring_map.expire(shard, field, ttl_ms or 0)",
                "sweep(from, count): expiring_map.sweep of each shard; entries: expiring_map.entries of each shard; len: HLEN of every shard (counts expired entries not removed yet)",
            ],
        ),
        protocol(
            "native",
            &[
                "HGETEX",
                "HSETEX",
                "HMGET",
                "HPEXPIRE",
                "HPTTL",
                "HPERSIST",
                "HDEL",
                "HGETALL",
                "HPEXPIRETIME",
                "HKEYS",
                "HLEN",
            ],
            &[
                "put / put_if_absent: expiring_map.put_native per shard (HMGET, HLEN, HKEYS and HPTTL only past the cap or the entry limit, HDEL of the evicted, HSETEX shard [PX ttl_ms] FIELDS n field value ...): the portable put's arguments and reply, cap and FULL refusal included",
                "every operation first checks the server has native_needs (native_probe, once per map; the Rust crate: its connection's capabilities); without them InvalidArgument path native_refusal, nothing written",
                "get: HMGET, and with max_idle_ms HPEXPIRE shard max_idle_ms GT FIELDS n field ...; ttl_of: HPTTL; persist: HPERSIST; expire: HPEXPIRE; remove: HDEL",
                "entries: HGETALL then HPEXPIRETIME; sweep: the server removes expired fields itself (HKEYS counts the live ones)",
            ],
        ),
        protocol(
            "choose_path",
            &["DEL", "HSET", "HPEXPIRE", "MEMORY", "OBJECT"],
            &[
                "portable unless the server has hash_field_ttl and hash_getex; then 200 entries into <base>:probe with the 6-byte expiry,",
                "MEMORY USAGE SAMPLES 0, the same entries plain with HPEXPIRE 3600000 on every field, MEMORY USAGE, OBJECT ENCODING, DEL;",
                "native only when its encoding starts with listpack and it costs no more",
            ],
        ),
    ]
}
