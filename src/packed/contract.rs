//! The packed records' contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::{DEFAULT_SHARD_BYTES, MAX_SHARD_BYTES};
use crate::contract::parts::*;

pattern_contract! {
    "packed", "fixed-width records per integer id, packed into sharded strings";
    params, keys, constants, functions, protocols
}

/// The records' parameters: the base, the record width, the id range, the shard size and density.
fn params() -> Vec<Param> {
    vec![
        base_param("the records' name"),
        required_param("width", "integer", "bytes per record, at least 1"),
        required_param(
            "max_id",
            "integer",
            "the largest id accepted (ids above it are refused before sending)",
        ),
        required_param(
            "ids_per_shard",
            "integer",
            "ids per shard; default max(1, floor(default_shard_bytes / width)); ids_per_shard * width <= max_shard_bytes",
        ),
        param(
            "dense",
            "bool",
            json!(true),
            "grow a shard to its full length in one exact SET before its first write (reserve), else grow as written",
        ),
    ]
}

/// The records' keys: the shards, a request key, the layout.
fn keys() -> Vec<KeyTemplate> {
    vec![
        key(
            "shard",
            "<base>:<shard>",
            "string",
            "ids shard * ids_per_shard to (shard + 1) * ids_per_shard - 1; no hash tag",
        ),
        key(
            "request",
            "{<base>:<shard>}:req:<request_id>",
            "string",
            "the result of one add with a request id, for its time to live, in the shard's slot (request_key)",
        ),
        crate::layout::meta_key_template("pattern, version, width, ids_per_shard"),
    ]
}

/// The shard sizes.
fn constants() -> Vec<Constant> {
    vec![
        constant(
            "default_shard_bytes",
            DEFAULT_SHARD_BYTES,
            "the default shard length: one 64 KiB allocation",
        ),
        constant(
            "max_shard_bytes",
            MAX_SHARD_BYTES,
            "the longest string Redis accepts",
        ),
    ]
}

/// The computations every client does: an id's place, the space a shard reserves, the integer fields.
fn functions() -> Vec<Function> {
    vec![
        shared::request_key(),
        function(
            "locate",
            "locate(id) -> (shard, byte offset)",
            &[
                "0 <= id <= max_id; shard = floor(id / ids_per_shard); offset = (id mod ids_per_shard) * width",
            ],
        ),
        function(
            "reserve",
            "reserve() -> integer",
            &["dense: ids_per_shard * width; otherwise 0"],
        ),
        function(
            "int_field",
            "int_field(offset, size 1..6, signed) -> integer",
            &[
                "a little-endian integer of size bytes at offset inside a record (two's complement when signed)",
            ],
        ),
    ]
}

/// How each operation runs: the recorded layout, the records.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "record_layout",
            &["layout.claim"],
            &[
                "before a store's first write: layout.claim(<base>:meta, pattern packed, version 1, width W, ids_per_shard N); a stored layout that differs refuses every write",
            ],
        ),
        protocol(
            "records",
            &["packed.put", "packed.add", "packed.swap", "GETRANGE"],
            &[
                "get(id): GETRANGE shard offset offset+width-1, padded with zero bytes to width (never written: all zero)",
                "set many: group by shard; one packed.put(shard, reserve, offset, record, ...) per shard",
                "add(id, field, delta): packed.add(shard, request_key(shard) without id, reserve, offset + field offset, size, signed, delta, 0)",
                "-> the new value (OVERFLOW: unchanged); not idempotent: after a lost reply its outcome is unknown",
                "add_once(id, field, delta, request_id): the same with request_key(shard, request_id) and request_ttl_ms: a call with the",
                "same request returns the first result without adding again, so it may be sent again after a lost reply",
                "compare_and_set(id, expected, new): packed.swap(shard, reserve, offset, expected, new) -> {1, previous} or {0, current}",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::packed::{Le, PackedRecords};

    #[test]
    fn templates_render_the_keys_the_records_use() {
        let c = contract();
        let p = PackedRecords::new("logins", Le::<u32>::new(), 10_000_000).unwrap();
        assert_eq!(p.ids_per_shard(), DEFAULT_SHARD_BYTES / 4);
        let (key, off) = p.locate(123_456).unwrap();
        let shard = (123_456 / p.ids_per_shard()).to_string();
        assert_eq!(
            KeyTemplate::render(
                &c.keys[0].template,
                &[("base", "logins"), ("shard", &shard)]
            ),
            key
        );
        assert_eq!(off, (123_456 % p.ids_per_shard()) * 4);
    }
}
