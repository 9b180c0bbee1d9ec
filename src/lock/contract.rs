//! The lock's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::{DEFAULT_PREFIX, MAX_LEASE_MS};
use crate::contract::{PatternContract, constant, function, key, param, protocol, scripts_of};

/// The token length in random bytes (32 hex digits).
pub(crate) const TOKEN_BYTES: usize = 16;

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        name: "lock".into(),
        summary:
            "owner-token lock with fencing tokens: only the owner's token releases or extends it"
                .into(),
        scripts: scripts_of("lock"),
        params: vec![
            param(
                "prefix",
                "string",
                json!(DEFAULT_PREFIX),
                "what every key starts with (no `{` or `}`)",
            ),
            param(
                "name",
                "string",
                json!(null),
                "the lock's name: not empty, no `{` or `}`",
            ),
            param(
                "lease_ms",
                "integer",
                json!(30_000),
                "the lease every acquire asks for, 1 to max_lease_ms",
            ),
            param(
                "retry_ms",
                "integer",
                json!(50),
                "the mean pause between attempts of a blocking acquire",
            ),
        ],
        keys: vec![
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
                "the fencing counter: INCR per acquire, never expires",
            ),
        ],
        constants: vec![
            constant(
                "max_lease_ms",
                MAX_LEASE_MS,
                "the longest lease the scripts accept",
            ),
            constant(
                "token_bytes",
                TOKEN_BYTES as u64,
                "random bytes of an owner token",
            ),
        ],
        functions: vec![function(
            "new_token",
            "new_token() -> string",
            &[
                "token_bytes bytes from the operating system's cryptographic random source,",
                "as lowercase hex (32 digits): unguessable, so no other client can release the lock",
            ],
        )],
        protocols: vec![
            protocol(
                "try_acquire",
                &["lock.acquire"],
                &[
                    "token = new_token(); reply = lock.acquire(lock, fence, token, lease_ms)",
                    "reply > 0: acquired; the lease is (token, fence = reply)",
                    "reply < 0: busy; the holder's lease ends in -reply ms",
                    "reply = 0: busy; the holder has no TTL",
                ],
            ),
            protocol(
                "acquire",
                &["lock.acquire"],
                &[
                    "try_acquire until acquired or the timeout has passed (then: timed out)",
                    "between attempts sleep retry_ms times a uniform random factor from 0.5 to 1.5, at most until the deadline",
                    "a timeout of 0 makes exactly one attempt",
                ],
            ),
            protocol(
                "release_and_extend",
                &["lock.release", "lock.extend", "lock.owned"],
                &[
                    "release(token) and extend(token, lease_ms) answer 1 when token owned the lock, 0 when not (nothing changed)",
                    "owned(token) answers the remaining lease in ms, -1 without a TTL, 0 when token does not own it",
                ],
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::contract::render;
    use crate::keys::Prefix;
    use crate::lock::{Lock, new_token};

    #[test]
    fn templates_render_the_keys_the_lock_uses() {
        let c = contract();
        let lock = Lock::builder("job:7")
            .prefix(Prefix::new("app:lock:").unwrap())
            .lease(Duration::from_secs(1))
            .build()
            .unwrap();
        let vars = [("prefix", "app:lock:"), ("name", "job:7")];
        assert_eq!(render(&c.keys[0].template, &vars), lock.key());
        assert_eq!(render(&c.keys[1].template, &vars), lock.fence_key());
        assert_eq!(new_token().len(), 2 * TOKEN_BYTES);
        assert_eq!(c.params[0].default, json!(DEFAULT_PREFIX));
        let default = Lock::new("x", Duration::from_secs(1)).unwrap();
        assert_eq!(
            render(
                &c.keys[0].template,
                &[("prefix", DEFAULT_PREFIX), ("name", "x")]
            ),
            default.key()
        );
    }
}
