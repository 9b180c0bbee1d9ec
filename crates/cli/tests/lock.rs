//! `redis-patterns lock status` driven as a binary, on a server and a
//! cluster, while a lock is held through either driver.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use std::time::Duration;

use redis_patterns::lock::Lock;

/// Runs `redis-patterns lock status NAME ARGS.. --url URL`; (success, stdout, stderr).
fn status(url: &str, name: &str, args: &[&str]) -> (bool, String, String) {
    let run = common::cli(url, &[&["lock", "status", name], args].concat());
    (run.ok(), run.stdout, run.stderr)
}

#[test]
fn lock_status_reports_a_held_lock_on_a_server_and_a_cluster() {
    support::on_server_and_cluster_at(|d, url| {
        let (ok, out, err) = status(url, "job", &[]);
        assert!(ok, "{err}");
        assert_eq!(
            out.trim(),
            "lock redis:lock:{job} is free; no fencing token handed out yet (the next acquire gets 1)"
        );
        let lock = Lock::new("job", Duration::from_secs(60)).unwrap();
        let lease = d.run(lock.try_acquire()).unwrap();
        let (ok, out, err) = status(url, "job", &["--json"]);
        assert!(ok, "{err}");
        let json: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
        assert_eq!(json["key"], "redis:lock:{job}");
        assert_eq!(json["held"], true);
        assert_eq!(json["fence"], lease.fence);
        let left = json["remaining_lease_ms"].as_u64().expect("a lease");
        assert!(left > 0 && left <= 60_000, "{left}");
        assert!(!out.contains(&lease.token), "never the holder's token");
        let (_, text, _) = status(url, "job", &[]);
        assert!(
            text.contains("is held") && text.contains("fencing counter 1"),
            "{text}"
        );
        let (ok, _, err) = status(url, "j{b", &[]);
        assert!(!ok && err.contains("lock name"), "{err}");
    });
}
