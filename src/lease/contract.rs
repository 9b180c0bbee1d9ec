//! The pieces of the contract for other languages (see [`crate::contract`])
//! that every leased resource shares: its wake-up channel, its lease and
//! the longest lease.

use serde_json::json;

use crate::contract::parts::{Constant, KeyTemplate, Param, constant, key, param};

/// The wake-up channel of a leased resource (lock, semaphore, read-write
/// lock): a release publishes on it, a waiter subscribes to it.
pub(crate) fn wake_key() -> KeyTemplate {
    key(
        "wake",
        "<prefix>{<name>}:wake",
        "channel",
        "the shard channel a release publishes on (no key): a waiter subscribes to it (SSUBSCRIBE)",
    )
}

/// The `lease_ms` param of a leased resource (default 30 s).
pub(crate) fn lease_param(meaning: &str) -> Param {
    param("lease_ms", "integer", json!(30_000), meaning)
}

/// The `max_lease_ms` constant of a leased resource.
pub(crate) fn max_lease_constant(max_lease_ms: u64) -> Constant {
    constant(
        "max_lease_ms",
        max_lease_ms,
        "the longest lease the scripts accept",
    )
}
