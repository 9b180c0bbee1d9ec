//! Helpers for the tests of the leased resources (lock, semaphore, rwlock):
//! `#[path]`-included next to `mod support`.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use redis::Value;

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
