//! The semaphore's contract for other languages (see [`crate::contract`]).

use super::{DEFAULT_PREFIX, MAX_LEASE_MS, MAX_LIMIT};
use crate::contract::parts::{
    PatternContract, constant, key, name_param, prefix_param, protocol, required_param,
};
use crate::lease::contract::{fair_param, lease_param, leased_keys, max_lease_constant};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        params: vec![
            prefix_param(DEFAULT_PREFIX),
            name_param("semaphore"),
            required_param(
                "limit",
                "integer",
                "holders at once, 1 to max_limit; every client of a semaphore uses the same",
            ),
            lease_param("the lease of every permit, 1 to max_lease_ms"),
            fair_param(),
        ],
        keys: leased_keys([key(
            "permits",
            "<prefix>{<name>}",
            "zset",
            "holder token -> the end of its lease (unix ms, the server's TIME); expires with its longest lease",
        )]),
        constants: vec![
            constant(
                "max_limit",
                MAX_LIMIT,
                "the most holders a semaphore allows",
            ),
            max_lease_constant(MAX_LEASE_MS),
        ],
        protocols: vec![
            protocol(
                "try_acquire",
                &["semaphore.acquire"],
                &[
                    "token = lock.new_token(); reply = semaphore.acquire(permits, queue, places, token, limit, lease_ms, 0, fair)",
                    "(place_ms 0: a single attempt takes no place in the queue)",
                    "reply = 1: a permit (also when token held one already: a retry, with a fresh lease)",
                    "reply <= 0: every permit is taken; the first lease ends in -reply ms",
                ],
            ),
            protocol(
                "acquire",
                &["semaphore.acquire"],
                &[
                    "as the lock's acquire, each attempt semaphore.acquire(permits, queue, places, token, limit, lease_ms, place_ms = lease_ms / 3 by default, fair):",
                    "when refused, SSUBSCRIBE wake, try once more, then wait for a message on wake that is the caller's token or `released`",
                    "or for the first lease's end (-reply ms, + 1 ms), at most place_ms / 2 and until the deadline, and try again; at the timeout release(token) gives the place up",
                ],
            ),
            protocol(
                "release_and_extend",
                &["semaphore.release", "semaphore.extend"],
                &[
                    "release(token, limit, wake) answers 1 when token held a live permit, 0 otherwise (a queued token gives its place up);",
                    "it publishes on wake the tokens of the first live waiters, one per free permit, or `released` when none waits",
                    "extend(token, lease_ms) answers 1 when token held a live permit, now lasting lease_ms from now",
                ],
            ),
        ],
        ..PatternContract::of(
            "semaphore",
            "at most limit holders of a named resource, each permit with its own lease on the server's clock; a release wakes the waiters",
            include_str!("client.api"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Prefix;
    use crate::lease::contract::assert_leased_keys;
    use crate::semaphore::Semaphore;

    #[test]
    fn templates_render_the_keys_the_semaphore_uses() {
        let sem = Semaphore::builder("exports", 3)
            .prefix(Prefix::new("app:sem:").unwrap())
            .build()
            .unwrap();
        assert_leased_keys(
            &contract(),
            ("app:sem:", "exports"),
            &[sem.key()],
            &sem.leased,
        );
    }
}
