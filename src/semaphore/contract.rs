//! The semaphore's contract for other languages (see [`crate::contract`]).

use serde_json::json;

use super::{DEFAULT_PREFIX, MAX_LEASE_MS, MAX_LIMIT};
use crate::contract::parts::{
    PatternContract, constant, key, name_param, param, prefix_param, protocol, scripts_of,
};
use crate::lease::contract::{lease_param, max_lease_constant, wake_key};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        name: "semaphore".into(),
        summary: "at most limit holders of a named resource, each permit with its own lease on the server's clock; a release wakes the waiters".into(),
        scripts: scripts_of("semaphore"),
        params: vec![
            prefix_param(DEFAULT_PREFIX),
            name_param("semaphore"),
            param(
                "limit",
                "integer",
                json!(null),
                "holders at once, 1 to max_limit; every client of a semaphore uses the same",
            ),
            lease_param("the lease of every permit, 1 to max_lease_ms"),
        ],
        keys: vec![
            key(
                "permits",
                "<prefix>{<name>}",
                "zset",
                "holder token -> the end of its lease (unix ms, the server's TIME); expires with its longest lease",
            ),
            wake_key(),
        ],
        constants: vec![
            constant("max_limit", MAX_LIMIT, "the most holders a semaphore allows"),
            max_lease_constant(MAX_LEASE_MS),
        ],
        functions: vec![],
        api: crate::contract::api::parse("semaphore", include_str!("client.api")),
        protocols: vec![
            protocol(
                "try_acquire",
                &["semaphore.acquire"],
                &[
                    "token = lock.new_token(); reply = semaphore.acquire(permits, token, limit, lease_ms)",
                    "reply = 1: a permit (also when token held one already: a retry, with a fresh lease)",
                    "reply <= 0: every permit is taken; the first lease ends in -reply ms",
                ],
            ),
            protocol(
                "acquire",
                &["semaphore.acquire"],
                &[
                    "as the lock's acquire: try; when refused, SSUBSCRIBE wake, try once more, then wait for a message on wake",
                    "or for the first lease's end (-reply ms, + 1 ms), at most until the deadline, and try again",
                ],
            ),
            protocol(
                "release_and_extend",
                &["semaphore.release", "semaphore.extend"],
                &[
                    "release(token, wake) answers 1 when token held a live permit (and publishes on wake), 0 otherwise",
                    "extend(token, lease_ms) answers 1 when token held a live permit, now lasting lease_ms from now",
                ],
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::parts::render_keys;
    use crate::keys::Prefix;
    use crate::semaphore::Semaphore;

    #[test]
    fn templates_render_the_keys_the_semaphore_uses() {
        let c = contract();
        let sem = Semaphore::builder("exports", 3)
            .prefix(Prefix::new("app:sem:").unwrap())
            .build()
            .unwrap();
        let vars = [("prefix", "app:sem:"), ("name", "exports")];
        assert_eq!(render_keys(&c, &vars), [sem.key(), sem.channel()]);
    }
}
