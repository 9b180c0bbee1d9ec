//! The lock's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::{DEFAULT_PREFIX, MAX_LEASE_MS};
use crate::contract::parts::*;
use crate::lease::TOKEN_BYTES;
use crate::lease::contract::{fair_param, lease_param, leased_keys, max_lease_constant};

pattern_contract! {
    "lock", "owner-token lock with fencing tokens: only the owner's token releases or extends it; a release wakes the waiters";
    params, keys, constants, functions, protocols
}

fn params() -> Vec<Param> {
    vec![
        prefix_param(DEFAULT_PREFIX),
        name_param("lock"),
        lease_param("the lease every acquire asks for, 1 to max_lease_ms"),
        param(
            "retry_ms",
            "integer",
            json!(50),
            "the mean pause between attempts of a polling acquire (a notified one waits for the wake channel instead)",
        ),
        fair_param(),
    ]
}

fn keys() -> Vec<KeyTemplate> {
    leased_keys([
        key(
            "lock",
            "<prefix>{<name>}",
            "string",
            "the owner's token, with the lease as its TTL",
        ),
        key(
            "fence",
            "<prefix>{<name>}:fence",
            "string",
            "the last fencing token handed out (max(last + 1, the server's clock in µs) per acquire), never expires",
        ),
    ])
}

fn constants() -> Vec<Constant> {
    vec![
        max_lease_constant(MAX_LEASE_MS),
        constant(
            "token_bytes",
            TOKEN_BYTES as u64,
            "random bytes of an owner token",
        ),
    ]
}

fn functions() -> Vec<Function> {
    vec![function(
        "new_token",
        "new_token() -> string",
        &[
            "token_bytes bytes from the operating system's cryptographic random source,",
            "as lowercase hex (32 digits): unguessable, so no other client can release the lock",
        ],
    )]
}

fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "try_acquire",
            &["lock.acquire"],
            &[
                "token = new_token(); reply = lock.acquire(lock, fence, queue, places, token, lease_ms, 0, fair)",
                "(place_ms 0: a single attempt takes no place in the queue)",
                "reply > 0: acquired; the lease is (token, fence = reply)",
                "reply < 0: busy; the holder's lease ends in -reply ms",
                "reply = 0: busy; the holder has no TTL",
                "the same call again with the same token (its reply was lost) answers the same fence, with a fresh lease",
            ],
        ),
        protocol(
            "acquire",
            &["lock.acquire"],
            &[
                "each attempt: lock.acquire(lock, fence, queue, places, token, lease_ms, place_ms = lease_ms / 3 by default, fair): a refused one takes (or renews) the caller's place in the queue",
                "notified: attempt; when busy, SSUBSCRIBE wake (on the node of its slot), attempt once more (or: subscribe before the first attempt),",
                "then wait for a message on wake that is the caller's token or `released` (messages naming other waiters are for them),",
                "or for the holder's remaining lease (-reply ms, + 1 ms), at most place_ms / 2 (the place is renewed) and until the deadline, and attempt again",
                "at the timeout: release(token, wake) gives the place up (timed out)",
                "polling (no pub/sub): between attempts sleep retry_ms times a uniform random factor from 0.5 to 1.5, at most until the deadline",
                "until acquired or the timeout has passed (then: timed out); a timeout of 0 makes exactly one attempt",
            ],
        ),
        protocol(
            "acquire_acknowledged",
            &["lock.acquire"],
            &[
                "the acquire call and WAIT replicas timeout_ms in one pipeline on one connection to the lock's primary",
                "WAIT answering fewer than replicas: not replicated; release(token, wake) and never use the fence",
            ],
        ),
        protocol(
            "release_and_extend",
            &["lock.release", "lock.extend", "lock.owned"],
            &[
                "release(token, wake) and extend(token, lease_ms) answer 1 when token owned the lock, 0 when not (nothing changed)",
                "a release (and the release of a queued token, which gives its place up) leaving the lock free publishes on wake the token of the first live waiter, or `released` when none waits",
                "owned(token) answers the remaining lease in ms, -1 without a TTL, 0 when token does not own it",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::contract::parts::KeyTemplate;
    use crate::keys::Prefix;
    use crate::lease::contract::assert_leased_keys;
    use crate::lock::Lock;

    #[test]
    fn templates_render_the_keys_the_lock_uses() {
        let c = contract();
        let lock = Lock::builder("job:7")
            .prefix(Prefix::new("app:lock:").unwrap())
            .build()
            .unwrap();
        assert_leased_keys(
            &c,
            ("app:lock:", "job:7"),
            &[lock.key(), lock.fence_key()],
            &lock.leased,
        );
        assert_eq!(Lock::new_token().len(), 2 * TOKEN_BYTES);
        assert_eq!(c.params[0].default, json!(DEFAULT_PREFIX));
        let default = Lock::new("x", Duration::from_secs(1)).unwrap();
        assert_eq!(
            KeyTemplate::render(
                &c.keys[0].template,
                &[("prefix", DEFAULT_PREFIX), ("name", "x")]
            ),
            default.key()
        );
    }
}
