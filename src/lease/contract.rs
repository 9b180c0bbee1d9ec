//! The pieces of the contract for other languages (see [`crate::contract`])
//! that every leased resource shares: its wake-up channel and waiter queue,
//! its lease and the longest lease.

use serde_json::json;

use crate::contract::parts::{Constant, KeyTemplate, Param, constant, key, param};
#[cfg(test)]
use crate::contract::parts::{PatternContract, render_keys};
#[cfg(test)]
use crate::lease::leasing::Leased;

/// The keys of a leased resource (lock, semaphore, read-write lock): its
/// own (`own`), then its wake-up channel (a release publishes on it, a
/// waiter subscribes to it), its waiter queue and the waiters' places.
pub(crate) fn leased_keys(own: impl IntoIterator<Item = KeyTemplate>) -> Vec<KeyTemplate> {
    let waiting = [
        key(
            "wake",
            "<prefix>{<name>}:wake",
            "channel",
            "the shard channel a release publishes on (no key): a waiter subscribes to it (SSUBSCRIBE)",
        ),
        key(
            "queue",
            "<prefix>{<name>}:queue",
            "zset",
            "the waiters: token -> arrival (unix µs, the server's TIME), first come first; expires with the longest place",
        ),
        key(
            "places",
            "<prefix>{<name>}:places",
            "zset",
            "the waiters' places: token -> the end of its place (unix ms); a waiter whose place ended is skipped",
        ),
    ];
    own.into_iter().chain(waiting).collect()
}

/// The `fair` param of a lock or a semaphore.
pub(crate) fn fair_param() -> Param {
    param(
        "fair",
        "bool",
        json!(false),
        "whether the resource goes to its waiters in arrival order (a caller behind a live waiter waits for it)",
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

/// Asserts that `contract`'s key templates, rendered with `prefix` and
/// `name`, are the keys a leased resource uses, in [`leased_keys`]'s order:
/// its own (`own`), then the wake-up channel and waiter queue of `leased`.
#[cfg(test)]
pub(crate) fn assert_leased_keys(
    contract: &PatternContract,
    (prefix, name): (&str, &str),
    own: &[&str],
    leased: &Leased,
) {
    let waiting = [&leased.channel, &leased.queue, &leased.places];
    let expected: Vec<&str> = own
        .iter()
        .copied()
        .chain(waiting.map(String::as_str))
        .collect();
    assert_eq!(
        render_keys(contract, &[("prefix", prefix), ("name", name)]),
        expected
    );
}
