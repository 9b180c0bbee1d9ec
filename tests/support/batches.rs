//! Batches of lock script calls whose replies show that every call ran
//! exactly once, in order, for the tests of `NOSCRIPT` and of a missing
//! library function (`tests/bundle.rs`, `tests/functions.rs`):
//! `#[path]`-included next to `mod support`.
#![allow(dead_code)]

use redis_patterns::{Batch, ErrorKind};

use crate::support::{Driver, lock_acquire, lock_release};

/// `rounds` rounds on the lock `key` (its fence `{key}:fence`): an acquire,
/// a stranger's release, the owner's release. Each reply depends on every
/// call before it having run exactly once, in order: the batch and the
/// replies it must give on a fresh lock.
pub fn lock_rounds(key: &str, rounds: i64) -> (Batch, Vec<i64>) {
    let mut batch = Batch::new();
    let mut expected = Vec::new();
    for round in 0..rounds {
        let token = format!("tok-{round}");
        batch.script(lock_acquire(key, &token, 60_000));
        // With now_us 0 the fencing token counts acquisitions.
        expected.push(round + 1);
        batch.script(lock_release(key, "someone-else"));
        expected.push(0);
        batch.script(lock_release(key, &token));
        expected.push(1);
    }
    (batch, expected)
}

/// Acquires `{p}{q}`, releases it, acquires `{p}{r}`, in one batch, on a
/// server where the release cannot run (its script or function is
/// missing) while the acquires can: the batch stops after its first call,
/// and each acquire ran exactly once (`con` reads the fences).
pub fn stops_after_the_first_call(d: &mut Driver, con: &mut redis::Connection, p: &str) {
    let (q, r) = (format!("{p}{{q}}"), format!("{p}{{r}}"));
    let mut batch = Batch::new();
    batch.script(lock_acquire(&q, "a", 60_000));
    batch.script(lock_release(&q, "a"));
    batch.script(lock_acquire(&r, "b", 60_000));
    let err = d.run(batch).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::PipelineInterrupted {
                ran_in_order: 1,
                total: 3
            }
        ),
        "{}: {err:?}",
        d.name()
    );
    let fences: (i64, i64) = redis::pipe()
        .get(format!("{q}:fence"))
        .get(format!("{r}:fence"))
        .query(con)
        .expect("GET");
    assert_eq!(fences, (1, 1), "each acquire ran exactly once");
}
