//! `cargo run --example expiring_map`: a session store of entries that
//! expire, with a max-idle time (every read keeps a session alive), on
//! listpack-sized shards; the planner picks the path this server is
//! cheapest on and says why. Talks to `REDIS_URL`, else starts a throwaway
//! redis-server.

use std::time::Duration;

use redis_patterns::expiring_map::{ExpiringMap, Ttl};
use redis_patterns::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, url) = redis_patterns_test_support::example_server()?;
    run(&url)
}

/// The example, against the server at `url`.
pub fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut con = Connection::open(url)?;
    let (planned, plan) = ExpiringMap::planned("example:sessions", 10_000).run(&mut con)?;
    println!(
        "{} shards, {} path: {}",
        plan.plan.shards,
        planned.path().name(),
        plan.path.reason
    );
    let sessions = ExpiringMap::builder("example:sessions", plan.plan.shards)
        .path(planned.path())
        .max_idle(Some(Duration::from_millis(300)))
        .build()?;
    sessions
        .put("s:alice", "alice", Some(Duration::from_millis(300)))
        .run(&mut con)?;
    sessions
        .put("s:bob", "bob", Some(Duration::from_millis(300)))
        .run(&mut con)?;
    // Alice keeps reading (each read pushes her expiry 300 ms ahead); Bob
    // does not.
    let mut reads = 0;
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(100));
        let who: Option<String> = sessions.get("s:alice").run(&mut con)?;
        reads += usize::from(who.is_some());
    }
    let bob: Option<String> = sessions.get("s:bob").run(&mut con)?;
    let state = if bob.is_none() {
        "expired"
    } else {
        "still there"
    };
    println!("after 400 ms: alice found by {reads} of 4 reads, bob {state}");
    assert_eq!(bob, None);
    if let Ttl::Expires(left) = sessions.ttl_of("s:alice").run(&mut con)? {
        println!("alice expires in {} ms unless read again", left.as_millis());
    }
    let mut from = Some(0);
    let (mut removed, mut live) = (0, 0);
    while let Some(f) = from {
        let r = sessions.sweep(f, 64).run(&mut con)?;
        (removed, live, from) = (removed + r.removed, live + r.live, r.next);
    }
    println!("sweep: {removed} expired entries removed, {live} live");
    Ok(())
}
