//! The listpack limits of hashes on a server ([`ListpackLimits`]), read with
//! `CONFIG GET` as an operation.

use serde::Serialize;

use crate::core::config::limits;
use crate::core::{LimitsSource, Op};

/// The listpack limits of hashes on a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ListpackLimits {
    /// `hash-max-listpack-entries`: a hash with more fields converts.
    pub entries: u64,
    /// `hash-max-listpack-value`: a field or value longer than this (bytes)
    /// converts the hash.
    pub value: u64,
}

impl Default for ListpackLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The parameters asked for: Redis 7 names first, the pre-7 `ziplist` names
/// as a fallback.
const NAMES: [&str; 4] = [
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "hash-max-ziplist-entries",
    "hash-max-ziplist-value",
];

impl ListpackLimits {
    /// Redis's documented defaults (512 entries, 64 bytes).
    pub const DEFAULT: ListpackLimits = ListpackLimits {
        entries: 512,
        value: 64,
    };

    /// The server's live limits from `CONFIG GET`, or `None` when the server
    /// refuses `CONFIG` (renamed, ACL, managed service) or does not answer
    /// both. Connection errors are returned as errors. On a cluster it asks
    /// one node (every node of a cluster should share these settings).
    pub fn query() -> Op<Option<Self>> {
        Self::read().map(|(limits, source)| (source == LimitsSource::Server).then_some(limits))
    }

    /// The server's live limits, or [`ListpackLimits::DEFAULT`] with the
    /// reason ([`LimitsSource::DefaultBecauseDenied`] when the server
    /// refuses `CONFIG`, [`LimitsSource::DefaultBecauseUnreported`] when it
    /// does not report them).
    pub fn read() -> Op<(Self, LimitsSource)> {
        limits(
            &NAMES,
            |map| {
                let get = |a: &str, b: &str| {
                    map.get(a)
                        .or_else(|| map.get(b))
                        .and_then(|v| v.parse::<u64>().ok())
                };
                Some(Self {
                    entries: get(NAMES[0], NAMES[2])?,
                    value: get(NAMES[1], NAMES[3])?,
                })
            },
            Self::DEFAULT,
        )
    }

    /// The server's live limits, or [`ListpackLimits::DEFAULT`] when it
    /// refuses `CONFIG` ([`ListpackLimits::read`] says which).
    pub fn from_server() -> Op<Self> {
        Self::read().map(|(limits, _)| limits)
    }
}
