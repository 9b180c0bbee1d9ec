//! Helpers for the tests of the leased resources (lock, semaphore, rwlock):
//! `#[path]`-included next to `mod support`.
#![allow(dead_code)]

use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use redis::Value;
use redis_patterns::{ErrorKind, Op};

use crate::support::Driver;

/// Subscribers of a shard channel (`PUBSUB SHARDNUMSUB`, on its slot's node).
pub fn subscribers(d: &mut Driver, channel: &str) -> i64 {
    let reply: Vec<Value> = d.cmd(
        channel,
        redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(channel),
    );
    match reply.get(1) {
        Some(Value::Int(n)) => *n,
        other => panic!("PUBSUB SHARDNUMSUB reply {other:?}"),
    }
}

/// Polls `cond` until it holds, for at most 30 s (test setup, not a timing
/// assertion).
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A waiter: `op` (an acquire that waits) run in a thread on a new driver
/// of `d`'s kind connected to `url`, returned once it has subscribed to
/// `channel` (its wake-up channel).
pub fn waiter<T: Send + 'static>(
    d: &mut Driver,
    url: &str,
    op: Op<T>,
    channel: &str,
) -> JoinHandle<redis_patterns::Result<T>> {
    let mut w = d.another(url);
    let handle = thread::spawn(move || w.run(op));
    eventually("the waiter subscribed", || subscribers(d, channel) == 1);
    handle
}

/// Checks that `r` was refused as an invalid argument `name` before
/// anything was sent (no script named), with a reason.
pub fn assert_invalid<T: std::fmt::Debug>(r: redis_patterns::Result<T>, name: &str) {
    match r.map_err(|e| e.into_kind()) {
        Err(ErrorKind::InvalidArgument {
            name: n,
            reason,
            script: None,
        }) => {
            assert_eq!(n, name);
            assert!(!reason.is_empty() && !reason.ends_with('.'), "{reason:?}");
        }
        other => panic!("expected InvalidArgument({name}), got {other:?}"),
    }
}

/// `CONFIG RESETSTAT`, then `body`, then checks that no script was called
/// (`INFO commandstats` has no `EVALSHA`): refused input sends nothing.
pub fn assert_no_script_call(
    server: &redis_patterns_test_support::LocalServer,
    body: impl FnOnce(),
) {
    let mut con = server.connection();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .expect("RESETSTAT");
    body();
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut con)
        .expect("INFO commandstats");
    assert!(
        !stats.contains("cmdstat_evalsha"),
        "nothing was sent: {stats}"
    );
}
