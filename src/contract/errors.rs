//! The meaning of every domain error code a script may answer with
//! (`-CODE detail`), and the typed kind the Rust API maps it to
//! ([`crate::ErrorKind`]); the generated clients name their exception
//! classes after the kind.

use serde::{Deserialize, Serialize};

/// One domain error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCode {
    /// The code, the first word of the error reply.
    pub code: &'static str,
    /// The [`crate::ErrorKind`] variant it becomes (and the exception class
    /// of the generated clients).
    pub kind: &'static str,
    /// What the detail after the code says.
    pub detail: &'static str,
    /// What it means, and what a caller does about it.
    pub meaning: &'static str,
}

/// Every domain error code of the bundle.
pub static ERROR_CODES: &[ErrorCode] = &[
    ErrorCode {
        code: "BADARG",
        kind: "InvalidArgument",
        detail: "<arg name> <reason>",
        meaning: "an argument (or the number of keys or arguments: name `keys` / `argv`) is outside \
                  the script's declaration; nothing was written. The reason is the manifest's \
                  `reason` of that argument, or the body's own check. A client that validates \
                  arguments like the manifest says never sends such a call.",
    },
    ErrorCode {
        code: "RINGCONF",
        kind: "RollingLayout",
        detail: "stored shards=<n> shard_size=<n>, called with shards=<n> shard_size=<n>",
        meaning: "a rolling store's index was written with another ring size or shard size than \
                  this call passes: every writer of one logical key must use the same limit and \
                  shard_size. Nothing was written.",
    },
    ErrorCode {
        code: "BLOOMCONFIG",
        kind: "BloomConfigMismatch",
        detail: "<field> stored <x> requested <y>, or block <key> ...",
        meaning: "a sized Bloom filter exists with other parameters than the ones requested (or \
                  a block exists without a config and holds data); nothing was changed. Open the \
                  filter with its stored parameters instead.",
    },
    ErrorCode {
        code: "NOFILTER",
        kind: "BloomMissing",
        detail: "block <key> is missing or lost its sentinel bit",
        meaning: "a sized Bloom filter's block is missing or lost its sentinel bit (deleted, \
                  evicted, flushed): its bits cannot be trusted. Nothing was written.",
    },
    ErrorCode {
        code: "LAYOUT",
        kind: "LayoutMismatch",
        detail: "<meta key> holds shards=<n>, this call uses shards=<n>",
        meaning: "the day's meta key stores another shard count than this call passes: every \
                  writer of a visit day uses the layout stored with its first member. Nothing \
                  was written; read the stored shard count (HGET <meta key> shards) and use it.",
    },
    ErrorCode {
        code: "FULL",
        kind: "ShardFull",
        detail: "<key> holds <n> fields; ... would exceed <limit>",
        meaning: "a strict sharded-hash write would push the shard past max_entries (its \
                  hash-max-listpack-entries), which would convert it out of listpack; nothing \
                  was written. Plan more shards.",
    },
    ErrorCode {
        code: "OVERFLOW",
        kind: "Overflow",
        detail: "<value> + <delta> leaves the <size>-byte field range <lo>..<hi>",
        meaning: "a packed record's integer field would leave its range; the record was not \
                  changed.",
    },
    ErrorCode {
        code: "UIDRANGE",
        kind: "UidOutOfRange",
        detail: "uid <uid> is above the configured maximum <max>",
        meaning: "a user id is above the configured maximum bit offset (the offset trap: SETBIT \
                  at 4e9 allocates ~500 MB); nothing was written.",
    },
    ErrorCode {
        code: "MAXMEMORY",
        kind: "NotEnoughMemory",
        detail: "needed <bytes> available <bytes>: growing <key or blocks>",
        meaning: "growing a string by more than 64 KiB would take the server past maxmemory \
                  (INFO memory: used_memory + needed > maxmemory, with used_memory_dataset \
                  counted as free under an allkeys-* eviction policy); nothing was written. \
                  Free memory, raise maxmemory, or use smaller shards or blocks.",
    },
    ErrorCode {
        code: "DAYENDED",
        kind: "DayEnded",
        detail: "expire_at <t> is not after the server time <now>",
        meaning: "a visit was added to a day whose keys would already have expired (its end of \
                  day plus grace is not after the server's clock); nothing was written.",
    },
];

impl ErrorCode {
    /// The entry of `code`.
    pub fn of(code: &str) -> Option<&'static ErrorCode> {
        ERROR_CODES.iter().find(|e| e.code == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_code_has_a_meaning_and_its_kind() {
        for s in crate::scripts::ALL {
            for code in s.errors {
                assert!(ErrorCode::of(code).is_some(), "{}: {code}", s.name);
            }
        }
        for e in ERROR_CODES {
            assert!(
                crate::scripts::ALL
                    .iter()
                    .any(|s| s.errors.contains(&e.code)),
                "{} is declared by no script",
                e.code
            );
            // The kind the Rust API maps the code to (its variant name).
            let kind = format!("{:?}", crate::error::from_script("p.op", e.code, "d"));
            assert!(
                kind.starts_with(&format!("{} ", e.kind)),
                "{}: {kind}",
                e.code
            );
        }
    }
}
