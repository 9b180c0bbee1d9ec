//! Batches of lock script calls whose replies show that every call ran
//! exactly once, in order, for the tests of `NOSCRIPT` and of a missing
//! library function (`tests/bundle.rs`, `tests/functions.rs`):
//! `#[path]`-included next to `mod support`.
#![allow(dead_code)]

use redis_patterns::{Batch, ErrorKind, scripts};

use crate::support::Driver;

/// `rounds` rounds on the lock `key` (its fence `{key}:fence`): an acquire,
/// a stranger's release, the owner's release. Each reply depends on every
/// call before it having run exactly once, in order: the batch and the
/// replies it must give on a fresh lock.
pub fn lock_rounds(key: &str, rounds: i64) -> (Batch, Vec<i64>) {
    let (fence, wake) = (format!("{key}:fence"), format!("{key}:wake"));
    let (queue, places) = (format!("{key}:queue"), format!("{key}:places"));
    let mut batch = Batch::new();
    let mut expected = Vec::new();
    for round in 0..rounds {
        let token = format!("tok-{round}");
        batch.script(scripts::lock::acquire(
            key,
            &fence,
            &queue,
            &places,
            &token,
            60_000,
            0,
            false,
            &[0],
        ));
        // With now_us 0 the fencing token counts acquisitions.
        expected.push(round + 1);
        batch.script(scripts::lock::release(
            key,
            &queue,
            &places,
            "someone-else",
            &wake,
        ));
        expected.push(0);
        batch.script(scripts::lock::release(key, &queue, &places, &token, &wake));
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
    batch.script(scripts::lock::acquire(
        &q,
        &format!("{q}:fence"),
        &format!("{q}:queue"),
        &format!("{q}:places"),
        "a",
        60_000,
        0,
        false,
        &[0],
    ));
    batch.script(scripts::lock::release(
        &q,
        &format!("{q}:queue"),
        &format!("{q}:places"),
        "a",
        &format!("{q}:wake"),
    ));
    batch.script(scripts::lock::acquire(
        &r,
        &format!("{r}:fence"),
        &format!("{r}:queue"),
        &format!("{r}:places"),
        "b",
        60_000,
        0,
        false,
        &[0],
    ));
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
