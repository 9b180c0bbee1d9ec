//! The crate's one error type, and the one place where a script's domain
//! error codes (`redis.error_reply("CODE detail")`) become typed variants.

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
///
/// Input is validated before any command is sent: an [`Error::InvalidInput`]
/// means nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter failed validation; nothing was sent to the server.
    #[error("invalid {name}: {reason}")]
    InvalidInput { name: &'static str, reason: String },

    /// A script refused one of its arguments (code `BADARG`). The Rust API
    /// validates first, so this is reached by callers that build arguments
    /// themselves (other languages, `redis-cli`).
    #[error("script {script} rejected an argument: {detail}")]
    ScriptArgument {
        script: &'static str,
        detail: String,
    },

    /// The lock is held by another owner (non-blocking acquire).
    #[error("lock {key} is held by another owner")]
    LockBusy {
        key: String,
        /// The holder's remaining lease, when it has one.
        retry_after_ms: Option<u64>,
    },

    /// A blocking acquire did not get the lock before its deadline.
    #[error("timed out after {waited_ms} ms waiting for lock {key}")]
    LockTimeout { key: String, waited_ms: u64 },

    /// A rolling store's index was written with another ring size or shard
    /// size than this call uses (code `RINGCONF`): every writer of one
    /// logical key must use the same `limit` and `shard_size`. Nothing was
    /// written.
    #[error("script {script} refused a rolling store with another layout: {detail}")]
    RollingLayout {
        script: &'static str,
        detail: String,
    },

    /// A rolling store record could not be turned into JSON, or a stored
    /// value could not be read back as the requested type.
    #[error("record {field:?}: {source}")]
    RollingValue {
        field: String,
        source: serde_json::Error,
    },

    /// A field or value is longer than the server's `hash-max-listpack-value`
    /// and the sharded hash is strict: writing it would convert its shard out
    /// of listpack. Nothing was sent.
    #[error("{what} of {len} bytes exceeds hash-max-listpack-value {limit}")]
    ListpackValueTooLong {
        what: &'static str,
        len: usize,
        limit: usize,
    },

    /// A strict sharded-hash write would push a shard past
    /// `hash-max-listpack-entries` (code `FULL`); nothing was written.
    #[error("script {script}: shard full: {detail}")]
    ShardFull {
        script: &'static str,
        detail: String,
    },

    /// A Bloom filter exists with other parameters than the ones asked for
    /// (code `BLOOMCONFIG`); nothing was changed.
    #[error("bloom filter config mismatch: {detail}")]
    BloomConfigMismatch { detail: String },

    /// A Bloom filter (or one of its blocks) is missing, or a block lost its
    /// sentinel bit (deleted, evicted, flushed) (code `NOFILTER`).
    #[error("bloom filter not found: {detail}")]
    BloomMissing { detail: String },

    /// A packed-record id is above the configured maximum; nothing was sent.
    #[error("id {id} is above the configured maximum {max}")]
    IdOutOfRange { id: u64, max: u64 },

    /// An integer field of a packed record would leave its range (code
    /// `OVERFLOW`); the record was not changed.
    #[error("script {script}: overflow: {detail}")]
    Overflow {
        script: &'static str,
        detail: String,
    },

    /// A user id is above the configured maximum bitmap offset (the offset
    /// trap: `SETBIT key 4000000000 1` makes Redis allocate ~500 MB). Raised
    /// before anything is written; code `UIDRANGE` from a script.
    #[error("uid out of range: {detail}")]
    UidOutOfRange { detail: String },

    /// A visit was added to a day whose keys would already have expired
    /// (its end of day plus grace is not after the server's clock); nothing
    /// was written. Code `DAYENDED` from a script.
    #[error("day already ended: {detail}")]
    DayEnded { detail: String },

    /// `SCRIPT LOAD` answered a different SHA1 than the one in the registry.
    #[error("server returned sha1 {server} for script {script}, expected {expected}")]
    ShaMismatch {
        script: &'static str,
        expected: &'static str,
        server: String,
    },

    /// A script raised a domain error code this crate does not know (a newer
    /// script on the server, or a code missing from [`Error::from_script`]).
    #[error("script {script} failed: {code} {detail}")]
    Script {
        script: &'static str,
        code: String,
        detail: String,
    },

    /// A pipeline met `NOSCRIPT` in the middle while later calls ran, so the
    /// rest cannot be re-sent without reordering; the first `ran_in_order`
    /// calls ran, in order, and no call ran twice.
    #[error("pipeline interrupted by NOSCRIPT after {ran_in_order} of {total} calls ran in order")]
    PipelineInterrupted { ran_in_order: usize, total: usize },

    /// The server sent fewer replies than commands.
    #[error("short reply from server")]
    ShortReply,

    /// Any other error from the server or the connection.
    #[error(transparent)]
    Redis(#[from] redis::RedisError),
}

impl Error {
    /// A validation failure of parameter `name`.
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            name,
            reason: reason.into(),
        }
    }

    /// Maps the error of one call of `script`: a domain code the script
    /// declares becomes its typed variant, anything else stays a redis error.
    pub(crate) fn from_redis(script: &'static crate::ScriptInfo, err: redis::RedisError) -> Self {
        match err.code() {
            Some(code) if script.errors.contains(&code) => {
                Self::from_script(script.name, code, err.detail().unwrap_or(""))
            }
            _ => Self::Redis(err),
        }
    }

    /// The one table of domain error codes. Every code a script lists in its
    /// `-- ERRORS` header line must have an arm here (checked by a test).
    pub fn from_script(script: &'static str, code: &str, detail: &str) -> Self {
        let detail = detail.to_string();
        match code {
            "BADARG" => Self::ScriptArgument { script, detail },
            "RINGCONF" => Self::RollingLayout { script, detail },
            "BLOOMCONFIG" => Self::BloomConfigMismatch { detail },
            "NOFILTER" => Self::BloomMissing { detail },
            "FULL" => Self::ShardFull { script, detail },
            "OVERFLOW" => Self::Overflow { script, detail },
            "UIDRANGE" => Self::UidOutOfRange { detail },
            "DAYENDED" => Self::DayEnded { detail },
            _ => Self::Script {
                script,
                code: code.to_string(),
                detail,
            },
        }
    }

    /// Whether [`Error::from_script`] has a typed arm for `code`.
    pub fn knows_code(code: &str) -> bool {
        !matches!(Self::from_script("", code, ""), Self::Script { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each code lands on its own variant, with the detail kept. (That every
    /// code a script declares is in this table is checked in tests/bundle.rs.)
    type IsVariant = fn(&Error) -> bool;

    #[test]
    fn every_code_maps_to_its_variant() {
        let cases: [(&str, IsVariant); 8] = [
            ("BADARG", |e| matches!(e, Error::ScriptArgument { .. })),
            ("RINGCONF", |e| matches!(e, Error::RollingLayout { .. })),
            ("BLOOMCONFIG", |e| {
                matches!(e, Error::BloomConfigMismatch { .. })
            }),
            ("NOFILTER", |e| matches!(e, Error::BloomMissing { .. })),
            ("FULL", |e| matches!(e, Error::ShardFull { .. })),
            ("OVERFLOW", |e| matches!(e, Error::Overflow { .. })),
            ("UIDRANGE", |e| matches!(e, Error::UidOutOfRange { .. })),
            ("DAYENDED", |e| matches!(e, Error::DayEnded { .. })),
        ];
        for (code, is_variant) in cases {
            let e = Error::from_script("p.op", code, "the detail");
            assert!(is_variant(&e), "{code} -> {e:?}");
            assert!(e.to_string().contains("the detail"), "{code}: {e}");
            assert!(Error::knows_code(code));
        }
        assert!(!Error::knows_code("NOSUCHCODE"));
        assert!(matches!(
            Error::from_script("p.op", "NOSUCHCODE", "x"),
            Error::Script { .. }
        ));
    }
}
