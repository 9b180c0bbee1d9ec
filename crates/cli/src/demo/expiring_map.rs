use std::time::Duration;

use redis_patterns::expiring_map::{ExpiringMap, Ttl};
use redis_patterns::{Connection, Request};

pub fn run(url: &str, prefix: &str) -> super::DemoResult {
    let mut con = Connection::open(url)?;
    let base = format!("{prefix}sessions");
    let (planned, plan) = ExpiringMap::planned(&base, 10_000).run(&mut con)?;
    crate::out::outln!(
        "planned {} shards for 10000 sessions; path {}: {}",
        plan.plan.shards,
        planned.path().name(),
        plan.path.reason
    );
    // Sessions of 300 ms, kept alive by every read (max-idle 300 ms).
    let sessions = ExpiringMap::builder(&base, plan.plan.shards)
        .path(planned.path())
        .max_idle(Some(Duration::from_millis(300)))
        .build()?;
    let lease = Some(Duration::from_millis(300));
    sessions.put("alice", "cart:3 items", lease).run(&mut con)?;
    sessions.put("bob", "cart:1 item", lease).run(&mut con)?;
    sessions.put("admin", "no expiry", None).run(&mut con)?;
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(100));
        let _: Option<String> = sessions.get("alice").run(&mut con)?;
    }
    let got: Vec<Option<String>> = sessions
        .get_many(&["alice", "bob", "admin"])
        .run(&mut con)?;
    for (who, v) in ["alice", "bob", "admin"].iter().zip(got) {
        let ttl = match sessions.ttl_of(who).run(&mut con)? {
            Ttl::Missing => "gone".to_string(),
            Ttl::Persistent => "no expiry".to_string(),
            Ttl::Expires(d) => format!("expires in {} ms", d.as_millis()),
        };
        crate::out::outln!(
            "after 400 ms, {who}: {} ({ttl})",
            v.as_deref().unwrap_or("expired, never returned")
        );
    }
    let (mut removed, mut from) = (0, Some(0));
    while let Some(f) = from {
        let r = sessions.sweep(f, 256).run(&mut con)?;
        (removed, from) = (removed + r.removed, r.next);
    }
    crate::out::outln!("sweep: {removed} expired entries removed, shard by shard");
    let keys: Vec<String> = (0..sessions.shards())
        .map(|s| sessions.key_of_shard(s))
        .collect();
    super::delete(&mut con, keys)
}
