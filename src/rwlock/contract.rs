//! The read-write lock's contract for other languages (see
//! [`crate::contract`]).

use super::{DEFAULT_PREFIX, MAX_LEASE_MS};
use crate::contract::parts::{
    PatternContract, key, name_param, prefix_param, protocol, scripts_of,
};
use crate::lease::contract::{lease_param, max_lease_constant, wake_key};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        name: "rwlock".into(),
        summary: "many readers or one writer, per-holder leases; a waiting writer's intent keeps new readers out; releases wake the waiters".into(),
        scripts: scripts_of("rwlock"),
        params: vec![
            prefix_param(DEFAULT_PREFIX),
            name_param("lock"),
            lease_param("the lease of every reader and writer, and how long a waiting writer's intent lasts unless renewed"),
        ],
        keys: vec![
            key(
                "writer",
                "<prefix>{<name>}",
                "string",
                "the writer's token, with its lease as TTL",
            ),
            key(
                "readers",
                "<prefix>{<name>}:readers",
                "zset",
                "reader token -> the end of its lease (unix ms, the server's TIME)",
            ),
            key(
                "intents",
                "<prefix>{<name>}:intents",
                "zset",
                "waiting writer token -> the end of its intent (unix ms); while one lasts, new readers are refused",
            ),
            wake_key(),
        ],
        constants: vec![max_lease_constant(MAX_LEASE_MS)],
        functions: vec![],
        api: crate::contract::api::parse("rwlock", include_str!("client.api")),
        protocols: vec![
            protocol(
                "read",
                &["rwlock.read_acquire"],
                &[
                    "reply = rwlock.read_acquire(writer, readers, intents, token, lease_ms): 1 a read lease (or its renewal),",
                    "<= 0 refused while a writer holds the lock or waits for it (-reply ms: when that lease or intent ends)",
                ],
            ),
            protocol(
                "write",
                &["rwlock.write_acquire", "rwlock.write_release"],
                &[
                    "reply = rwlock.write_acquire(writer, readers, intents, token, lease_ms, intent_ms = lease_ms): 1 the write lease,",
                    "<= 0 refused; the refusal recorded token's intent for intent_ms, so the waiter tries again at least every intent_ms / 2",
                    "a single attempt, or a waiter that gives up, withdraws the intent: write_release(writer, intents, token, wake)",
                ],
            ),
            protocol(
                "wait",
                &["rwlock.read_acquire", "rwlock.write_acquire"],
                &[
                    "as the lock's acquire: when refused, SSUBSCRIBE wake, try once more, then wait for a message on wake",
                    "or for -reply ms (+ 1 ms), at most until the deadline (a writer at most lease_ms / 2), and try again",
                ],
            ),
            protocol(
                "release_and_extend",
                &[
                    "rwlock.read_release",
                    "rwlock.write_release",
                    "rwlock.read_extend",
                    "rwlock.write_extend",
                ],
                &[
                    "read_release(readers, token, wake) and write_release(writer, intents, token, wake) answer 1 when token held that lease",
                    "read_extend(readers, token, lease_ms) and write_extend(writer, token, lease_ms) answer 1 when token held a live lease",
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
    use crate::rwlock::RwLock;

    #[test]
    fn templates_render_the_keys_the_lock_uses() {
        let c = contract();
        let lock = RwLock::builder("prices")
            .prefix(Prefix::new("app:rw:").unwrap())
            .build()
            .unwrap();
        let vars = [("prefix", "app:rw:"), ("name", "prices")];
        assert_eq!(
            render_keys(&c, &vars),
            [
                lock.writer_key(),
                lock.readers_key(),
                lock.intents_key(),
                lock.channel()
            ]
        );
    }
}
