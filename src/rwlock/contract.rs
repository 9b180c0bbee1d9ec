//! The read-write lock's contract for other languages (see
//! [`crate::contract`]).

use super::{DEFAULT_PREFIX, MAX_LEASE_MS};
use crate::contract::parts::{PatternContract, Protocol, key, name_param, prefix_param, protocol};
use crate::lease::contract::{fair_param, lease_param, leased_keys, max_lease_constant};

pub(crate) fn contract() -> PatternContract {
    PatternContract {
        params: vec![
            prefix_param(DEFAULT_PREFIX),
            name_param("lock"),
            lease_param(
                "the lease of every reader and writer, and how long a waiter's place (a writer's intent) lasts unless renewed",
            ),
            fair_param(),
        ],
        keys: leased_keys([
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
        ]),
        constants: vec![max_lease_constant(MAX_LEASE_MS)],
        protocols: protocols(),
        ..PatternContract::of(
            "rwlock",
            "many readers or one writer, per-holder leases; a waiting writer's intent keeps new readers out; a release wakes the next waiter (a writer, or the readers at the queue's head)",
            include_str!("client.api"),
        )
    }
}

/// How the read, write, wait and release/extend steps go.
fn protocols() -> Vec<Protocol> {
    vec![
        protocol(
            "read",
            &["rwlock.read_acquire"],
            &[
                "keys = (writer, readers, intents, queue, places) for every acquire and release",
                "reply = rwlock.read_acquire(keys, token, lease_ms, place_ms): 1 a read lease (or its renewal),",
                "<= 0 refused while a writer holds the lock or waits ahead of token (-reply ms: when that lease or intent ends);",
                "place_ms 0: a single attempt takes no place in the queue",
            ],
        ),
        protocol(
            "write",
            &["rwlock.write_acquire", "rwlock.write_release"],
            &[
                "reply = rwlock.write_acquire(keys, token, lease_ms, place_ms, fair): 1 the write lease, <= 0 refused (fair: also",
                "while the lock is free and another live waiter is ahead of token in the queue);",
                "the refusal recorded token's intent and place for place_ms (0: a single attempt records neither)",
            ],
        ),
        protocol(
            "wait",
            &["rwlock.read_acquire", "rwlock.write_acquire"],
            &[
                "as the lock's acquire, each attempt with place_ms = lease_ms / 3 by default: when refused, SSUBSCRIBE wake, try once more,",
                "then wait for a message on wake that is the caller's token or `released`, or for -reply ms (+ 1 ms),",
                "at most place_ms / 2 and until the deadline, and try again; at the timeout the release by token gives the place up",
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
                "read_release(keys, token, wake) and write_release(keys, token, wake) answer 1 when token held that lease",
                "(a queued token gives its place, a writer its intent, up); they publish on wake the token of the first live waiter",
                "when it waits to write and the lock is free, else those of the readers at the queue's head, or `released`",
                "read_extend(readers, token, lease_ms) and write_extend(writer, token, lease_ms) answer 1 when token held a live lease",
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Prefix;
    use crate::lease::contract::assert_leased_keys;
    use crate::rwlock::RwLock;

    #[test]
    fn templates_render_the_keys_the_lock_uses() {
        let lock = RwLock::builder("prices")
            .prefix(Prefix::new("app:rw:").unwrap())
            .build()
            .unwrap();
        assert_leased_keys(
            &contract(),
            ("app:rw:", "prices"),
            &[lock.writer_key(), lock.readers_key(), lock.intents_key()],
            &lock.leased,
        );
    }
}
