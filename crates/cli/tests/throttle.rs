//! `redis-patterns throttle` driven as a binary against a real server.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

/// Runs `redis-patterns throttle ARGS.. --url URL`; (success, stdout, stderr).
fn throttle(url: &str, args: &[&str]) -> (bool, String, String) {
    let run = common::cli(url, &[&["throttle"], args].concat());
    (run.ok(), run.stdout, run.stderr)
}

#[test]
fn cli_throttle_prints_cl_throttles_five_fields() {
    let server = support::server();
    let url = server.url();
    // 1 per hour, bursts of 2: nothing refills while the test runs.
    let args = ["user123", "--burst", "1", "--rate", "1/1h", "--json"];
    let (ok, first, err) = throttle(&url, &args);
    assert!(ok, "{err}");
    let first: serde_json::Value = serde_json::from_str(&first).expect("JSON");
    assert_eq!(
        first,
        serde_json::json!({"key": "rate:{user123}", "limited": false, "limit": 2,
            "remaining": 1, "retry_after_ms": null, "reset_after_ms": 3_600_000})
    );
    assert!(throttle(&url, &args).0);
    let (ok, text, err) = throttle(&url, &args[..5]);
    assert!(ok, "{err}");
    let fields: Vec<(&str, &str)> = text
        .lines()
        .map(|l| {
            l.split_once(' ')
                .map(|(k, v)| (k, v.trim()))
                .expect("name value")
        })
        .collect();
    let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
    assert_eq!(
        names,
        [
            "key",
            "limited",
            "limit",
            "remaining",
            "retry_after_ms",
            "reset_after_ms"
        ]
    );
    assert_eq!(
        &fields[..4],
        [
            ("key", "rate:{user123}"),
            ("limited", "1"),
            ("limit", "2"),
            ("remaining", "0")
        ]
    );
    let retry: u64 = fields[4].1.parse().expect("retry-after in ms");
    assert!(retry > 0 && retry <= 3_600_000, "{text}");
    // Peeking takes nothing; a bad rate or quantity is refused before sending.
    let (ok, peek, _) = throttle(
        &url,
        &["fresh", "--burst", "1", "--rate", "1/1h", "--quantity", "0"],
    );
    assert!(ok && peek.contains("remaining       2"), "{peek}");
    for (bad, says) in [
        (
            &["x", "--burst", "1", "--rate", "0/1s"][..],
            "count_per_period",
        ),
        (&["x", "--burst", "1", "--rate", "1/1w"], "unknown unit"),
        (&["x", "--burst=-1", "--rate", "1/1s"], "--burst"),
        (
            &["x", "--burst", "1", "--rate", "1/1s", "--quantity", "3"],
            "quantity",
        ),
    ] {
        let (ok, _, err) = throttle(&url, bad);
        assert!(!ok && err.contains(says), "{bad:?}: {err}");
    }
    assert_eq!(
        support::all_keys(&mut server.connection()),
        ["rate:{user123}"]
    );
}
