//! The crate's one error type, where a script's domain error codes
//! (`redis.error_reply("CODE detail")`, by the one table of
//! [`ErrorCode::ALL`](crate::contract::ErrorCode::ALL)) and the server's own
//! error codes (`OOM`, `WRONGTYPE`, `NOPERM` …) become typed kinds.
//!
//! [`Error`] is small (one pointer); what went wrong is its [`ErrorKind`]
//! ([`Error::kind`]), and the questions a caller usually asks have
//! predicates: [`Error::is_invalid_input`] (nothing was sent),
//! [`Error::is_retryable`] (the same call may succeed later),
//! [`Error::is_busy`] (someone else holds the lock).

use std::fmt;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate; see [`ErrorKind`].
pub struct Error(Box<ErrorKind>);

/// What went wrong.
///
/// Input is validated before any command is sent: an
/// [`ErrorKind::InvalidArgument`] without a script means nothing was sent;
/// with a script, the script refused it before its first write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument failed validation. `script` is `None` when the Rust API
    /// refused it before anything was sent, or the script that refused it
    /// (code `BADARG`) before its first write.
    #[error("{}invalid {name}: {reason}", script_prefix(*.script))]
    InvalidArgument {
        /// The script that refused it, or `None` when the Rust API did.
        script: Option<&'static str>,
        /// The argument's name.
        name: String,
        /// Why it was refused.
        reason: String,
    },

    /// The lock is held by another owner (non-blocking acquire).
    #[error("lock {key} is held by another owner")]
    LockBusy {
        /// The lock's key.
        key: String,
        /// The holder's remaining lease, when it has one.
        retry_after_ms: Option<u64>,
    },

    /// A blocking acquire did not get the lock (a semaphore permit, a
    /// read or write lease) before its deadline.
    #[error("timed out after {waited_ms} ms waiting for lock {key}")]
    LockTimeout {
        /// The lock's key.
        key: String,
        /// How long it waited.
        waited_ms: u64,
    },

    /// Every permit of the semaphore is taken (non-blocking acquire).
    #[error("every permit of semaphore {key} is taken")]
    NoPermit {
        /// The semaphore's key.
        key: String,
        /// How long until the first holder's lease ends.
        retry_after_ms: Option<u64>,
    },

    /// A guard's lock was lost while it was held: a renewal found it gone
    /// or held with another token, or renewals failed until the lease had
    /// run out. `fence` is the fencing token that was lost; writes made with
    /// it may have raced with the next holder's.
    #[error("lock {key} was lost (fencing token {fence})")]
    LockLost {
        /// The lock's key.
        key: String,
        /// The fencing token that was lost.
        fence: u64,
    },

    /// An acknowledged acquire (`WAIT`) reached fewer replicas than asked
    /// before its timeout. Its lock was released (best effort) and fencing
    /// token `fence` is never to be used; trying again may succeed.
    #[error("lock {key}: fencing token {fence} reached {acked} of {wanted} replicas in time")]
    NotReplicated {
        /// The lock's key.
        key: String,
        /// The fencing token of the acquire, never to be used.
        fence: u64,
        /// How many replicas acknowledged it.
        acked: u32,
        /// How many were asked for.
        wanted: u32,
    },

    /// A rolling store's index was written with another ring size or shard
    /// size than this call uses (code `RINGCONF`): every writer of one
    /// logical key must use the same `limit` and `shard_size`. Nothing was
    /// written.
    #[error("script {script} refused a rolling store with another layout: {detail}")]
    RollingLayout {
        /// The script that refused it.
        script: &'static str,
        /// The stored layout and the asked one.
        detail: String,
    },

    /// A rolling store record could not be turned into JSON, or a stored
    /// value could not be read back as the requested type.
    #[error("record `{field}`: {source}")]
    RollingValue {
        /// The record's field.
        field: String,
        /// The JSON error.
        source: serde_json::Error,
    },

    /// A field or value is longer than the server's `hash-max-listpack-value`
    /// and the sharded hash is strict: writing it would convert its shard out
    /// of listpack. Nothing was sent.
    #[error("{what} of {len} bytes exceeds hash-max-listpack-value {limit}")]
    ListpackValueTooLong {
        /// `field` or `value`.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The server's `hash-max-listpack-value`.
        limit: usize,
    },

    /// A strict sharded-hash write would push a shard past
    /// `hash-max-listpack-entries` (code `FULL`); nothing was written.
    #[error("script {script}: shard full: {detail}")]
    ShardFull {
        /// The script that refused it.
        script: &'static str,
        /// The shard and its entry limit.
        detail: String,
    },

    /// A Bloom filter exists with other parameters than the ones asked for
    /// (code `BLOOMCONFIG`); nothing was changed.
    #[error("bloom filter config mismatch: {detail}")]
    BloomConfigMismatch {
        /// The script's detail: which parameters differ.
        detail: String,
    },

    /// A Bloom filter (or one of its blocks) is missing, or a block lost its
    /// sentinel bit (deleted, evicted, flushed) (code `NOFILTER`).
    #[error("bloom filter not found: {detail}")]
    BloomMissing {
        /// The script's detail: which key.
        detail: String,
    },

    /// A sharded pattern's meta key holds another layout (shard count,
    /// scheme, width, ...) than the one this call uses: every writer and
    /// reader of one name must use the layout stored with its data. Nothing
    /// was written. Code `LAYOUT` from a script.
    #[error("{key} holds data laid out as {stored}, not as {requested}")]
    LayoutMismatch {
        /// The meta key.
        key: String,
        /// The stored layout, as text.
        stored: String,
        /// The layout of the refused call, as text.
        requested: String,
    },

    /// No layout is stored at this meta key: the data was written without
    /// one (by other code) or there is none yet. Name the layout explicitly.
    #[error("no layout is stored at {key}")]
    LayoutMissing {
        /// The meta key.
        key: String,
    },

    /// A packed-record id is above the configured maximum; nothing was sent.
    #[error("id {id} is above the configured maximum {max}")]
    IdOutOfRange {
        /// The refused id.
        id: u64,
        /// The configured maximum.
        max: u64,
    },

    /// An integer field of a packed record would leave its range (code
    /// `OVERFLOW`); the record was not changed.
    #[error("script {script}: overflow: {detail}")]
    Overflow {
        /// The script that refused it.
        script: &'static str,
        /// The field and its range.
        detail: String,
    },

    /// A user id is above the configured maximum bitmap offset (the offset
    /// trap: `SETBIT key 4000000000 1` makes Redis allocate ~500 MB). Raised
    /// before anything is written; code `UIDRANGE` from a script.
    #[error("uid out of range: {detail}")]
    UidOutOfRange {
        /// The uid and the maximum.
        detail: String,
    },

    /// A visit was added to a day whose keys would already have expired
    /// (its end of day plus grace is not after the server's clock); nothing
    /// was written. Code `DAYENDED` from a script.
    #[error("day already ended: {detail}")]
    DayEnded {
        /// When the day stopped accepting visits, and the server's time.
        detail: String,
    },

    /// The final count of a day was asked for while the day still accepts
    /// visits (before its end plus the counter's late window).
    #[error("day still open: {detail}")]
    DayOpen {
        /// The day, and when it stops accepting visits.
        detail: String,
    },

    /// The final count of a day was asked for after its keys expired (its
    /// end plus the retention's grace): the count is gone, not zero.
    #[error("day expired: {detail}")]
    DayExpired {
        /// The day, and when its keys expired.
        detail: String,
    },
    /// An allocation was refused before it was made: it needs `needed`
    /// bytes, more than `available` under `limit` (the server's `maxmemory`
    /// headroom, or the caller's ceiling on one allocation). Nothing was
    /// written. Code `MAXMEMORY` from a script, which checks the headroom
    /// itself before growing a string (Redis checks `maxmemory` only before a
    /// command or script starts, so one call could go far past it).
    #[error("{}{what} needs {needed} bytes, {available} available ({limit})", script_prefix(*.script))]
    NotEnoughMemory {
        /// What needs the memory (a Bloom filter, a shard's growth ...).
        what: String,
        /// Bytes the allocation needs.
        needed: u64,
        /// Bytes available under the limit.
        available: u64,
        /// Which limit refused it.
        limit: MemoryLimit,
        /// The script that refused it, or `None` when the Rust API did.
        script: Option<&'static str>,
    },

    /// `SCRIPT LOAD` answered a different SHA1 than the one in the registry.
    #[error("server returned sha1 {server} for script {script}, expected {expected}")]
    ShaMismatch {
        /// The script.
        script: &'static str,
        /// The SHA1 of the registry.
        expected: &'static str,
        /// The SHA1 the server answered.
        server: String,
    },

    /// A script raised a domain error code this crate does not know (a newer
    /// script on the server, or a code missing from the table in this module).
    #[error("script {script} failed: {code} {detail}")]
    Script {
        /// The script.
        script: &'static str,
        /// The error code.
        code: String,
        /// The text after the code.
        detail: String,
    },

    /// The server refused a command with one of its own error codes
    /// (`OOM`, `WRONGTYPE`, `NOPERM`, `READONLY`, `BUSY`, `LOADING`,
    /// `MASTERDOWN` …). `script` names the script whose call failed, when
    /// one did.
    #[error("{}{code} {message}", script_prefix(*.script))]
    Server {
        /// Which of the server's codes it is.
        kind: ServerErrorKind,
        /// The error code as the server sent it (`OOM`, `WRONGTYPE` …).
        code: String,
        /// The text after the code.
        message: String,
        /// The script whose call failed, when one did.
        script: Option<&'static str>,
    },

    /// A command of a pipeline did not run (`NOSCRIPT`, `LOADING` …) while a
    /// later one of the same slot did, so it cannot be sent again without
    /// reordering them (or a server's script cache was flushed again and
    /// again, [`Batch::MAX_ROUNDS`](crate::Batch::MAX_ROUNDS) times); the first
    /// `ran_in_order` calls ran, in order, and no call ran twice.
    #[error(
        "pipeline interrupted after {ran_in_order} of {total} calls ran in order: a call that did not run (NOSCRIPT, LOADING ...) cannot be sent again without reordering"
    )]
    PipelineInterrupted {
        /// How many calls ran, in order, from the first.
        ran_in_order: usize,
        /// How many calls the pipeline held.
        total: usize,
    },

    /// Requests that are not idempotent were written, and then the
    /// connection was lost before their replies came, or their node turned
    /// out to be a primary that a failover had replaced (its `WAIT` answered
    /// `UNBLOCKED ... (master -> replica?)`: what ran there may be
    /// discarded): they may or may not have taken effect, and they were not
    /// sent again. `scripts` names the scripts among them (a call of a
    /// script whose header says `IDEMPOTENT no`, or `if <arg>` without it),
    /// `commands` the plain commands (`INCR` …); `cause` says what happened
    /// (with the connection's or the server's error). Other commands of the
    /// same batch may have run. Check the data before making the call
    /// again, or use a call that is idempotent (e.g. with a
    /// [`RequestId`](crate::core::RequestId)).
    #[error("outcome unknown: {} {} sent, then {cause}; it may have run and was not sent again", unknown_names(.scripts, .commands), if .scripts.len() + .commands.len() == 1 { "was" } else { "were" })]
    OutcomeUnknown {
        /// The scripts whose outcome is unknown.
        scripts: Vec<&'static str>,
        /// The plain commands whose outcome is unknown.
        commands: Vec<String>,
        /// What happened to the connection or the node.
        cause: String,
    },

    /// Fewer replicas than asked acknowledged a batch's writes within the
    /// durability timeout (`WAIT`, see
    /// [`Durability`](crate::core::Durability)): the writes are on the
    /// primary but may be lost if it fails now.
    #[error(
        "only {acknowledged} of {wanted} replicas acknowledged the writes within {timeout_ms} ms"
    )]
    NotDurable {
        /// How many replicas acknowledged the writes.
        acknowledged: u32,
        /// How many were asked for.
        wanted: u32,
        /// The `WAIT` timeout.
        timeout_ms: u64,
    },

    /// The connection broke (`cause`) and cannot be opened again: it was
    /// wrapped without its client (`Connection::from_redis`,
    /// `AsyncConnection::from_multiplexed`), so the crate has nothing to
    /// reconnect with. Not retryable on this connection: make one that
    /// reconnects by itself — `Connection::open` / `AsyncConnection::open`
    /// with a URL, `AsyncConnection::from_manager` with a
    /// `ConnectionManager`, or `AsyncConnection::from_multiplexed_with_client`.
    #[error(
        "the connection was lost ({cause}) and cannot be opened again: it was handed over without its client; make one that reconnects: Connection::open or AsyncConnection::open with a URL, AsyncConnection::from_manager, or AsyncConnection::from_multiplexed_with_client"
    )]
    ConnectionLost {
        /// Why the connection broke.
        cause: String,
    },

    /// The server sent fewer replies than commands, or a reply of another
    /// shape than the operation expects.
    #[error("unexpected reply from server: {detail}")]
    UnexpectedReply {
        /// What was expected and what came.
        detail: String,
    },

    /// Any other error from the connection or the client library (I/O,
    /// protocol, authentication, configuration).
    #[error(transparent)]
    Redis(#[from] redis::RedisError),
}

fn unknown_names(scripts: &[&'static str], commands: &[String]) -> String {
    let names: Vec<&str> = scripts
        .iter()
        .copied()
        .chain(commands.iter().map(String::as_str))
        .collect();
    match names.as_slice() {
        [] => "a request".to_string(),
        [one] => one.to_string(),
        many => many.join(", "),
    }
}

/// Which limit refused an allocation ([`ErrorKind::NotEnoughMemory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryLimit {
    /// The server's `maxmemory` minus what it uses (`INFO memory`); with an
    /// `allkeys-*` eviction policy the data set counts as free.
    Maxmemory,
    /// The caller's ceiling on one allocation (e.g.
    /// [`BloomBuilder::max_memory`](crate::bloom::BloomBuilder::max_memory)),
    /// which applies with or without `maxmemory`.
    Ceiling,
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryLimit::Maxmemory => "under the server's maxmemory",
            MemoryLimit::Ceiling => "under the configured ceiling",
        })
    }
}

fn script_prefix(script: Option<&'static str>) -> String {
    script.map(|s| format!("script {s}: ")).unwrap_or_default()
}

/// The server's own error codes this crate tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerErrorKind {
    /// `OOM`: `maxmemory` reached and nothing can be evicted.
    OutOfMemory,
    /// `WRONGTYPE`: a key holds another type than the command needs.
    WrongType,
    /// `NOPERM`: the user's ACL denies the command or the key.
    NoPermission,
    /// `READONLY`: a write reached a replica (e.g. during a failover).
    ReadOnly,
    /// `BUSY`: another script is running past `busy-reply-threshold`.
    Busy,
    /// `LOADING`: the server is loading its dataset.
    Loading,
    /// `MASTERDOWN`: a replica lost its primary.
    MasterDown,
    /// `TRYAGAIN`: a cluster slot is being migrated.
    TryAgain,
    /// `CLUSTERDOWN`: the cluster cannot serve the slot.
    ClusterDown,
    /// `NOREPLICAS`: fewer replicas are connected than the primary's
    /// `min-replicas-to-write` asks (a replica lost during a failover);
    /// nothing was written.
    NoReplicas,
    /// `CROSSSLOT`: the keys of one command live in different slots.
    CrossSlot,
    /// `MOVED` / `ASK`: the slot lives on another node.
    Redirect,
    /// `NOSCRIPT`: the script is not in the server's cache.
    NoScript,
    /// The node stopped being a primary (a failover): `UNBLOCKED` (a `WAIT`
    /// released when the node turned into a replica) or a `WAIT` that a
    /// replica refused (`ERR WAIT cannot be used with replica instances`).
    /// The topology changed: the same call on a fresh view of it may
    /// succeed.
    Demoted,
    /// `ERR` and any other code.
    Other,
}

impl ServerErrorKind {
    /// The kind of a server error code (`OOM`, `WRONGTYPE` …).
    pub fn of_code(code: &str) -> Self {
        match code {
            "OOM" => Self::OutOfMemory,
            "WRONGTYPE" => Self::WrongType,
            "NOPERM" => Self::NoPermission,
            "READONLY" => Self::ReadOnly,
            "BUSY" => Self::Busy,
            "LOADING" => Self::Loading,
            "MASTERDOWN" => Self::MasterDown,
            "TRYAGAIN" => Self::TryAgain,
            "CLUSTERDOWN" => Self::ClusterDown,
            "NOREPLICAS" => Self::NoReplicas,
            "CROSSSLOT" => Self::CrossSlot,
            "MOVED" | "ASK" => Self::Redirect,
            "NOSCRIPT" => Self::NoScript,
            "UNBLOCKED" => Self::Demoted,
            _ => Self::Other,
        }
    }

    /// Whether the same command may succeed when sent again later, without
    /// anything changing on the caller's side.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::Busy
                | Self::Loading
                | Self::MasterDown
                | Self::TryAgain
                | Self::ClusterDown
                | Self::NoReplicas
                | Self::ReadOnly
                | Self::Redirect
                | Self::Demoted
        )
    }
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// The kind, by value.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    /// A validation failure of argument `name`, found before anything was
    /// sent.
    pub fn invalid(name: impl Into<String>, reason: impl Into<String>) -> Self {
        ErrorKind::InvalidArgument {
            script: None,
            name: name.into(),
            reason: reason.into(),
        }
        .into()
    }

    /// A copy of an argument refusal (other kinds keep their message only).
    pub(crate) fn duplicate(&self) -> Self {
        match self.kind() {
            ErrorKind::InvalidArgument {
                script,
                name,
                reason,
            } => ErrorKind::InvalidArgument {
                script: *script,
                name: name.clone(),
                reason: reason.clone(),
            }
            .into(),
            other => Self::unexpected(other.to_string()),
        }
    }

    /// A reply of another shape than expected.
    pub(crate) fn unexpected(detail: impl Into<String>) -> Self {
        ErrorKind::UnexpectedReply {
            detail: detail.into(),
        }
        .into()
    }

    /// The server sent fewer replies than commands.
    pub(crate) fn short_reply() -> Self {
        Self::unexpected("fewer replies than commands")
    }

    /// Whether an argument was refused (by the Rust API before anything was
    /// sent, or by a script before its first write).
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::InvalidArgument { .. }
                | ErrorKind::ListpackValueTooLong { .. }
                | ErrorKind::IdOutOfRange { .. }
                | ErrorKind::UidOutOfRange { .. }
        )
    }

    /// Whether the lock (or another resource) is held by someone else.
    pub fn is_busy(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::LockBusy { .. } | ErrorKind::NoPermit { .. }
        )
    }

    /// Whether the same call may succeed when made again later: a
    /// connection that dropped or timed out, or a server that is loading,
    /// busy, failing over or migrating a slot, or replicas that were late.
    /// (The connections already retried such errors by their
    /// [`RetryPolicy`](crate::core::RetryPolicy) before returning one.)
    /// [`ErrorKind::OutcomeUnknown`] is not: the call may have run, and
    /// making it again may apply it twice.
    pub fn is_retryable(&self) -> bool {
        match self.kind() {
            ErrorKind::Server { kind, .. } => kind.is_retryable(),
            ErrorKind::PipelineInterrupted { .. }
            | ErrorKind::NotReplicated { .. }
            | ErrorKind::NotDurable { .. } => true,
            ErrorKind::Redis(e) => {
                e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_timeout()
            }
            _ => false,
        }
    }

    /// The server's error kind, when the server refused a command.
    pub fn server_kind(&self) -> Option<ServerErrorKind> {
        match self.kind() {
            ErrorKind::Server { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// The script whose call failed, when the error came from one.
    pub fn script(&self) -> Option<&'static str> {
        match self.kind() {
            ErrorKind::InvalidArgument { script, .. }
            | ErrorKind::Server { script, .. }
            | ErrorKind::NotEnoughMemory { script, .. } => *script,
            ErrorKind::RollingLayout { script, .. }
            | ErrorKind::ShardFull { script, .. }
            | ErrorKind::Overflow { script, .. }
            | ErrorKind::ShaMismatch { script, .. }
            | ErrorKind::Script { script, .. } => Some(script),
            ErrorKind::OutcomeUnknown { scripts, .. } => scripts.first().copied(),
            _ => None,
        }
    }
}

/// Whether the table of codes has a typed arm for `code` (used by the tests
/// that check every script's declared codes).
#[cfg(test)]
fn knows_code(code: &str) -> bool {
    !matches!(
        crate::core::error_codes::from_script("", code, ""),
        ErrorKind::Script { .. }
    )
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self(Box::new(kind))
    }
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Self {
        Self::from_redis(None, err)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error_codes::from_script;

    /// Each code lands on its own kind, with the detail kept. (That every
    /// code a script declares is in this table is checked by
    /// `every_declared_code_has_a_typed_kind` below.)
    type IsKind = fn(&ErrorKind) -> bool;

    #[test]
    fn every_code_maps_to_its_kind() {
        let cases: [(&str, IsKind); 10] = [
            (
                "BADARG",
                |e| matches!(e, ErrorKind::InvalidArgument { script: Some("p.op"), name, .. } if name == "the"),
            ),
            ("RINGCONF", |e| matches!(e, ErrorKind::RollingLayout { .. })),
            ("BLOOMCONFIG", |e| {
                matches!(e, ErrorKind::BloomConfigMismatch { .. })
            }),
            ("NOFILTER", |e| matches!(e, ErrorKind::BloomMissing { .. })),
            ("FULL", |e| matches!(e, ErrorKind::ShardFull { .. })),
            ("OVERFLOW", |e| matches!(e, ErrorKind::Overflow { .. })),
            ("UIDRANGE", |e| matches!(e, ErrorKind::UidOutOfRange { .. })),
            ("DAYENDED", |e| matches!(e, ErrorKind::DayEnded { .. })),
            (
                "LAYOUT",
                |e| matches!(e, ErrorKind::LayoutMismatch { stored, .. } if stored == "shards=2"),
            ),
            ("MAXMEMORY", |e| {
                matches!(
                    e,
                    ErrorKind::NotEnoughMemory {
                        limit: MemoryLimit::Maxmemory,
                        ..
                    }
                )
            }),
        ];
        for (code, is_kind) in cases {
            let detail = if code == "LAYOUT" {
                "k holds shards=2, this call uses the detail"
            } else {
                "the detail"
            };
            let e = Error::from(from_script("p.op", code, detail));
            assert!(is_kind(e.kind()), "{code} -> {e:?}");
            assert!(e.to_string().contains("detail"), "{code}: {e}");
            assert!(knows_code(code));
        }
        assert!(!knows_code("NOSUCHCODE"));
        assert!(matches!(
            from_script("p.op", "NOSUCHCODE", "x"),
            ErrorKind::Script { .. }
        ));
    }

    #[test]
    fn a_script_memory_refusal_keeps_its_figures() {
        let e = Error::from(from_script(
            "packed.put",
            "MAXMEMORY",
            "needed 1048576 available 4096: growing pk:0 to 1048576 bytes",
        ));
        match e.kind() {
            ErrorKind::NotEnoughMemory {
                what,
                needed,
                available,
                limit,
                script,
            } => {
                assert_eq!((*needed, *available), (1_048_576, 4096));
                assert_eq!(*limit, MemoryLimit::Maxmemory);
                assert_eq!(what, "growing pk:0 to 1048576 bytes");
                assert_eq!(*script, Some("packed.put"));
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            e.to_string(),
            "script packed.put: growing pk:0 to 1048576 bytes needs 1048576 bytes, 4096 available (under the server's maxmemory)"
        );
        assert!(!e.is_retryable() && !e.is_invalid_input());
    }

    #[test]
    fn every_declared_code_has_a_typed_kind() {
        for s in crate::scripts::ALL {
            for code in s.errors {
                assert!(
                    knows_code(code),
                    "{}: code {code} has no typed kind",
                    s.name
                );
            }
        }
    }

    #[test]
    fn server_codes_are_typed_and_name_the_script() {
        let e = Error::from_code(
            Some(&crate::scripts::LOCK_ACQUIRE),
            "WRONGTYPE",
            "Operation against a key holding the wrong kind of value script: d196c63d, on @user_script:16.",
        );
        assert_eq!(e.server_kind(), Some(ServerErrorKind::WrongType));
        assert_eq!(e.script(), Some("lock.acquire"));
        assert_eq!(
            e.to_string(),
            "script lock.acquire: WRONGTYPE Operation against a key holding the wrong kind of value"
        );
        assert!(!e.is_retryable());
        for (code, kind, retry) in [
            ("OOM", ServerErrorKind::OutOfMemory, false),
            ("NOPERM", ServerErrorKind::NoPermission, false),
            ("READONLY", ServerErrorKind::ReadOnly, true),
            ("BUSY", ServerErrorKind::Busy, true),
            ("LOADING", ServerErrorKind::Loading, true),
            ("MASTERDOWN", ServerErrorKind::MasterDown, true),
            ("NOREPLICAS", ServerErrorKind::NoReplicas, true),
            ("TRYAGAIN", ServerErrorKind::TryAgain, true),
            ("CLUSTERDOWN", ServerErrorKind::ClusterDown, true),
            ("UNBLOCKED", ServerErrorKind::Demoted, true),
            ("ASK", ServerErrorKind::Redirect, true),
        ] {
            assert_eq!(ServerErrorKind::of_code(code), kind);
            assert_eq!(kind.is_retryable(), retry, "{code}");
        }
        let denied = Error::from_code(
            Some(&crate::scripts::PACKED_PUT),
            "ERR",
            "The user executing the script can't run this command or subcommand script: 59e16af4, on @user_script:40.",
        );
        assert_eq!(denied.server_kind(), Some(ServerErrorKind::NoPermission));
        // The denied call is named from the script's line: `script` denied
        // `what` (the server's words) at its first line that holds `call`.
        let denied_at = |script: &'static crate::ScriptInfo, call: &str, what: &str| {
            let mut lines = script.source().lines();
            let line = 1 + lines.position(|l| l.contains(call)).expect(call);
            let message =
                format!("The user executing the script can't {what}, on @user_script:{line}.");
            (line, Error::from_code(Some(script), "ERR", &message))
        };
        let (line, e) = denied_at(
            &crate::scripts::PACKED_PUT,
            "redis.call(",
            "run this command or subcommand script: 59e16af4",
        );
        assert!(e.to_string().contains("denied: "), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("line {line} of packed.put")),
            "{e}"
        );
        let (_, e) = denied_at(
            &crate::scripts::LOCK_RELEASE,
            "redis.call('SPUBLISH'",
            "publish to the channel mentioned in the command script: 2de997f7",
        );
        assert_eq!(e.server_kind(), Some(ServerErrorKind::NoPermission));
        assert!(
            e.to_string()
                .contains("denied: SPUBLISH to the channel ARGV[2] (channel)"),
            "{e}"
        );
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }
}
