//! The one table of domain error codes a script may answer with
//! (`-CODE detail`): what each means, the typed kind the Rust API maps it
//! to ([`ErrorKind`], by the entry's own constructor), and the name the
//! generated clients give their exception class. The manifest, the clients
//! and [`from_script`] all read it; a test checks that every code a script
//! lists in its `-- ERRORS` header line has an entry, and every entry a
//! script.

use serde::Serialize;

use super::error::{ErrorKind, MemoryLimit};

/// One domain error code.
#[derive(Debug, Clone, Copy, Serialize)]
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
    /// The typed kind of a call of a script that answered the code: made
    /// from the script's name and the detail.
    #[serde(skip)]
    pub(crate) to_kind: fn(&'static str, &str) -> ErrorKind,
}

impl ErrorCode {
    /// Every domain error code of the bundle.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode {
            code: "BADARG",
            kind: "InvalidArgument",
            detail: "<arg name> <reason>",
            meaning: "an argument (or the number of keys or arguments: name `keys` / `argv`) is outside \
                      the script's declaration; nothing was written. The reason is the manifest's \
                      `reason` of that argument, or the body's own check. A client that validates \
                      arguments like the manifest says never sends such a call.",
            to_kind: invalid_argument,
        },
        ErrorCode {
            code: "RINGCONF",
            kind: "RollingLayout",
            detail: "stored shards=<n> shard_size=<n>, called with shards=<n> shard_size=<n>",
            meaning: "a rolling store's index was written with another ring size or shard size than \
                      this call passes: every writer of one logical key must use the same limit and \
                      shard_size. Nothing was written.",
            to_kind: |script, detail| ErrorKind::RollingLayout {
                script,
                detail: detail.to_string(),
            },
        },
        ErrorCode {
            code: "BLOOMCONFIG",
            kind: "BloomConfigMismatch",
            detail: "<field> stored <x> requested <y>, or block <key> ...",
            meaning: "a sized Bloom filter exists with other parameters than the ones requested (or \
                      a block exists without a config and holds data); nothing was changed. Open the \
                      filter with its stored parameters instead.",
            to_kind: |_, detail| ErrorKind::BloomConfigMismatch {
                detail: detail.to_string(),
            },
        },
        ErrorCode {
            code: "NOFILTER",
            kind: "BloomMissing",
            detail: "block <key> is missing or lost its sentinel bit",
            meaning: "a sized Bloom filter's block is missing or lost its sentinel bit (deleted, \
                      evicted, flushed): its bits cannot be trusted. Nothing was written.",
            to_kind: |_, detail| ErrorKind::BloomMissing {
                detail: detail.to_string(),
            },
        },
        ErrorCode {
            code: "LAYOUT",
            kind: "LayoutMismatch",
            detail: "<meta key> holds shards=<n>, this call uses shards=<n>",
            meaning: "the day's meta key stores another shard count than this call passes: every \
                      writer of a visit day uses the layout stored with its first member. Nothing \
                      was written; read the stored shard count (HGET <meta key> shards) and use it.",
            to_kind: layout_mismatch,
        },
        ErrorCode {
            code: "FULL",
            kind: "ShardFull",
            detail: "<key> holds <n> fields; ... would exceed <limit>",
            meaning: "a strict sharded-hash write would push the shard past max_entries (its \
                      hash-max-listpack-entries), which would convert it out of listpack; nothing \
                      was written. Plan more shards.",
            to_kind: |script, detail| ErrorKind::ShardFull {
                script,
                detail: detail.to_string(),
            },
        },
        ErrorCode {
            code: "OVERFLOW",
            kind: "Overflow",
            detail: "<value> + <delta> leaves the <size>-byte field range <lo>..<hi>",
            meaning: "a packed record's integer field would leave its range; the record was not \
                      changed.",
            to_kind: |script, detail| ErrorKind::Overflow {
                script,
                detail: detail.to_string(),
            },
        },
        ErrorCode {
            code: "UIDRANGE",
            kind: "UidOutOfRange",
            detail: "uid <uid> is above the configured maximum <max>",
            meaning: "a user id is above the configured maximum bit offset (the offset trap: SETBIT \
                      at 4e9 allocates ~500 MB); nothing was written.",
            to_kind: |_, detail| ErrorKind::UidOutOfRange {
                detail: detail.to_string(),
            },
        },
        ErrorCode {
            code: "MAXMEMORY",
            kind: "NotEnoughMemory",
            detail: "needed <bytes> available <bytes>: growing <key or blocks>",
            meaning: "growing a string by more than 64 KiB would take the server past maxmemory \
                      (INFO memory: used_memory + needed > maxmemory, with used_memory_dataset \
                      counted as free under an allkeys-* eviction policy); nothing was written. \
                      Free memory, raise maxmemory, or use smaller shards or blocks.",
            to_kind: not_enough_memory,
        },
        ErrorCode {
            code: "DAYENDED",
            kind: "DayEnded",
            detail: "expire_at <t> is not after the server time <now>",
            meaning: "a visit was added to a day whose keys would already have expired (its end of \
                      day plus grace is not after the server's clock); nothing was written.",
            to_kind: |_, detail| ErrorKind::DayEnded {
                detail: detail.to_string(),
            },
        },
    ];

    /// The entry of `code`.
    pub fn of(code: &str) -> Option<&'static ErrorCode> {
        Self::ALL.iter().find(|e| e.code == code)
    }
}

/// The typed kind of a call of `script` that answered `code` with
/// `detail`: the table's entry, or [`ErrorKind::Script`] for a code the
/// table does not know.
pub(crate) fn from_script(script: &'static str, code: &str, detail: &str) -> ErrorKind {
    match ErrorCode::of(code) {
        Some(entry) => (entry.to_kind)(script, detail),
        None => ErrorKind::Script {
            script,
            code: code.to_string(),
            detail: detail.to_string(),
        },
    }
}

/// `BADARG <arg name> <reason>`.
fn invalid_argument(script: &'static str, detail: &str) -> ErrorKind {
    let (name, reason) = detail.split_once(' ').unwrap_or((detail, ""));
    ErrorKind::InvalidArgument {
        script: Some(script),
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

/// `LAYOUT <key> holds <stored>, this call uses <requested>` (the scripts'
/// wording).
fn layout_mismatch(_: &'static str, detail: &str) -> ErrorKind {
    let (key, rest) = detail.split_once(" holds ").unwrap_or((detail, ""));
    let (stored, requested) = rest.split_once(", this call uses ").unwrap_or((rest, ""));
    ErrorKind::LayoutMismatch {
        key: key.to_string(),
        stored: stored.to_string(),
        requested: requested.to_string(),
    }
}

/// `MAXMEMORY needed <n> available <a>[: what]`.
fn not_enough_memory(script: &'static str, detail: &str) -> ErrorKind {
    let number = |word: &str| {
        let mut words = detail.split_whitespace();
        words.find(|w| *w == word);
        words
            .next()
            .and_then(|n| n.trim_end_matches(':').parse().ok())
            .unwrap_or(0)
    };
    ErrorKind::NotEnoughMemory {
        what: detail
            .split_once(": ")
            .map_or(detail, |(_, what)| what)
            .to_string(),
        needed: number("needed"),
        available: number("available"),
        limit: MemoryLimit::Maxmemory,
        script: Some(script),
    }
}
