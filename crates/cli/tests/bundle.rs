//! The CLI's bundle commands: `list`, `export`, `load` with redis-cli
//! `EVALSHA`, errors on stderr, and the demo.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use common::{bin, export, redis_cli, repo_root, temp_dir};
use redis_patterns::manifest::Manifest;
use redis_patterns::scripts::{self, ALL};

fn sha1_of(bytes: &[u8]) -> String {
    redis::Script::new(std::str::from_utf8(bytes).expect("scripts are UTF-8"))
        .get_hash()
        .to_string()
}

/// The manifest's entry of the script `name`.
fn entry<'a>(raw: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    raw["scripts"]
        .as_array()
        .expect("array")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn export_writes_identical_scripts_and_a_matching_manifest() {
    let dir = temp_dir("export");
    export(None, &dir);
    for s in ALL {
        // The shipped bytes: the file with the generated checks (and the
        // functions of its includes) inserted.
        let exported = std::fs::read_to_string(dir.join(s.file)).expect("exported script");
        assert_eq!(exported, s.source(), "{}", s.file);
        assert_eq!(sha1_of(exported.as_bytes()), s.sha1, "{}", s.file);
        assert_eq!(
            support::without_generated_code(&exported),
            Some(std::fs::read_to_string(repo_root().join("lua").join(s.file)).expect("source")),
            "{}",
            s.file
        );
    }
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest");
    manifest_matches_the_registry(&text);
    let raw: serde_json::Value = serde_json::from_str(&text).expect("json");
    lock_acquire_and_rolling_add_entries(&raw);
    assert_eq!(
        entry(&raw, "lock.acquire")["sha1"],
        sha1_of(&std::fs::read(dir.join("lock/acquire.lua")).expect("file"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The exported manifest is the registry's, and carries the field names
/// other languages read (they are the contract).
fn manifest_matches_the_registry(text: &str) {
    let parsed: Manifest = serde_json::from_str(text).expect("manifest parses");
    assert_eq!(parsed, Manifest::bundled());
    let raw: serde_json::Value = serde_json::from_str(text).expect("json");
    assert_eq!(raw["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(raw["manifest_version"], Manifest::VERSION);
    let first = &raw["scripts"][0];
    for field in [
        "name",
        "file",
        "sha1",
        "function",
        "keys",
        "key_specs",
        "args",
        "returns",
        "read_only",
        "description",
        "errors",
        "writes",
        "reads",
    ] {
        assert!(first.get(field).is_some(), "manifest entry lacks {field}");
    }
}

/// Two entries pinned field by field: a fixed-key script with integer and
/// string arguments, and a variadic one whose bound names another argument.
fn lock_acquire_and_rolling_add_entries(raw: &serde_json::Value) {
    let acquire = entry(raw, "lock.acquire");
    assert_eq!(acquire["file"], "lock/acquire.lua");
    assert_eq!(acquire["function"], "lock_acquire");
    assert_eq!(
        acquire["keys"],
        serde_json::json!(["lock", "fence", "queue", "places"])
    );
    assert_eq!(
        acquire["key_specs"][1],
        serde_json::json!({"name": "fence", "types": ["string"], "written": true, "variadic": false,
            "meaning": "the last fencing token handed out (never expires); while the lock is held, its holder's"})
    );
    assert_eq!(
        acquire["args"][1],
        serde_json::json!({"name": "lease_ms", "type": "integer", "min": 1,
            "max": 999_999_999_999_999_i64, "non_empty": false,
            "reason": "must be an integer from 1 to 999999999999999", "variadic": false,
            "meaning": "the lease in milliseconds"})
    );
    assert_eq!(
        acquire["args"][0],
        serde_json::json!({"name": "token", "type": "string", "non_empty": true,
            "reason": "must not be empty", "variadic": false,
            "meaning": "the new owner's token (unguessable; the Rust API uses 32 hex digits)"})
    );
    assert_eq!(
        acquire["writes"],
        serde_json::json!(["PEXPIRE", "SET", "ZADD", "ZREM"])
    );
    let add = entry(raw, "rolling.add");
    assert_eq!(
        add["args"][0]["max"],
        serde_json::json!({"arg": "shards", "offset": -1})
    );
    assert_eq!(
        add["key_specs"][1],
        serde_json::json!({"name": "slots..", "types": ["hash", "list"], "written": true, "variadic": true,
            "meaning": add["key_specs"][1]["meaning"]})
    );
    assert_eq!(acquire["read_only"], false);
}

#[test]
fn list_needs_no_server_and_names_every_script() {
    let text = common::run(bin().arg("list").env("REDIS_URL", "redis://127.0.0.1:1/"))
        .success()
        .stdout;
    for s in ALL {
        let line = text
            .lines()
            .find(|l| l.starts_with(s.name))
            .unwrap_or_else(|| panic!("{} listed", s.name));
        assert!(line.contains(s.sha1));
        for k in s.keys {
            assert!(line.contains(k.name));
        }
    }
}

#[test]
fn cli_errors_go_to_stderr_with_nonzero_exit() {
    // (bin() runs without REDIS_URL.)
    let out = common::cli("redis://127.0.0.1:1/", &["load"]);
    assert!(!out.ok());
    assert!(out.stderr.starts_with("redis-patterns: "));
}

#[test]
fn redis_cli_eval_runs_an_exported_file() {
    let server = support::server();
    let dir = temp_dir("eval");
    export(None, &dir);
    let file = dir.join("lock/acquire.lua");
    let eval = |args: &[&str]| -> String {
        let mut all = vec!["--eval", file.to_str().unwrap()];
        all.extend_from_slice(args);
        redis_cli(server.port(), false, &all)
    };
    let keys = [
        "redis:lock:{job}",
        "redis:lock:{job}:fence",
        "redis:lock:{job}:queue",
        "redis:lock:{job}:places",
        ",",
    ];
    let with = |args: &[&'static str]| -> Vec<&str> { keys.iter().chain(args).copied().collect() };
    // now_us 0: the fencing token counts acquisitions.
    assert_eq!(eval(&with(&["tok-1", "30000", "0", "0", "0"])), "1");
    // EVAL cached exactly the shipped bytes: their SHA1 is the registry's.
    let mut con = server.connection();
    let cached: Vec<i64> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(scripts::LOCK_ACQUIRE.sha1)
        .query(&mut con)
        .expect("SCRIPT EXISTS");
    assert_eq!(cached, [1]);
    // The generated checks run from the file too, before anything is written.
    let err = eval(&with(&["tok-2", "-5", "0", "0"]));
    assert!(
        err.contains("BADARG lease_ms must be an integer from 1 to 999999999999999"),
        "{err}"
    );
    let err = eval(&with(&["tok-2"]));
    assert!(err.contains("BADARG lease_ms missing"), "{err}");
    let fence: i64 = redis::cmd("GET")
        .arg("redis:lock:{job}:fence")
        .query(&mut con)
        .expect("GET");
    assert_eq!(fence, 1, "the refused calls wrote nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_cli_evalsha_runs_the_exported_lock() {
    let server = support::server();
    let text = common::cli(&server.url(), &["load"]).success().stdout;
    let sha = |name: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in load output"))
            .to_string()
    };
    let cli = |args: &[&str]| redis_cli(server.port(), false, args);
    let (acquire, release) = (sha("lock.acquire"), sha("lock.release"));
    assert_eq!(acquire, scripts::LOCK_ACQUIRE.sha1);
    let key = "redis:lock:{job}";
    let acquire_as = |token: &str, lease: &str| {
        cli(&[
            "EVALSHA",
            &acquire,
            "4",
            key,
            "redis:lock:{job}:fence",
            "redis:lock:{job}:queue",
            "redis:lock:{job}:places",
            token,
            lease,
            "0", // place_ms 0
            "0", // not fair
            "0", // now_us 0: the fencing token counts acquisitions
        ])
    };
    assert_eq!(acquire_as("tok-1", "30000"), "1");
    let busy: i64 = acquire_as("tok-2", "30000").parse().expect("integer");
    assert!(
        (-30000..0).contains(&busy),
        "busy answer is minus the remaining lease: {busy}"
    );
    let release_as = |token: &str| {
        cli(&[
            "EVALSHA",
            &release,
            "3",
            key,
            "redis:lock:{job}:queue",
            "redis:lock:{job}:places",
            token,
            "redis:lock:{job}:wake",
        ])
    };
    assert_eq!(release_as("tok-2"), "0");
    // A retry with the holder's own token: the same fencing token.
    assert_eq!(acquire_as("tok-1", "30000"), "1");
    assert_eq!(release_as("tok-1"), "1");
    assert_eq!(acquire_as("tok-2", "30000"), "2");
    let err = acquire_as("tok-3", "-5");
    assert!(err.contains("BADARG"), "{err}");
}

#[test]
fn demo_starts_its_own_server_and_runs_every_pattern() {
    let stdout = common::plain(&["demo"]).success().stdout;
    assert!(stdout.contains("started a throwaway redis-server on 127.0.0.1:"));
    assert!(stdout.contains(&format!("loaded {} scripts", ALL.len())));
    let mut patterns: Vec<&str> = ALL
        .iter()
        .map(|s| s.name.split('.').next().unwrap_or_default())
        .collect();
    patterns.dedup();
    for p in patterns {
        assert!(
            stdout.contains(&format!("== {p}")),
            "demo has no section for pattern {p}:\n{stdout}"
        );
    }
    assert!(stdout.trim_end().ends_with("demo finished"));
}

#[test]
fn demo_says_clearly_when_redis_server_is_missing() {
    let out = common::run(
        bin()
            .arg("demo")
            .env("REDIS_SERVER", "/nonexistent/redis-server"),
    );
    assert!(!out.ok());
    let stderr = out.stderr;
    assert!(
        stderr.contains("/nonexistent/redis-server` was not found")
            && stderr.contains("install Redis"),
        "{stderr}"
    );
}
