//! Every pattern command of the binary, against a real server and against
//! any node of a real three-node cluster, each answer read back from its
//! `--json` output (and the human form checked where it matters).

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use common::{cli, json, json_lines};
use serde_json::json;

/// Every command once, through the binary, at `url`.
fn every_command(url: &str, dir: &std::path::Path) {
    lock_commands(url);
    bloom_commands(url, dir);
    hash_commands(url, dir);
    map_commands(url);
    packed_commands(url);
    visits_commands(url);
    login_log_commands(url);
    signin_commands(url);
    rolling_commands(url);
}

/// `lock acquire / release` through the binary at `url`.
fn lock_commands(url: &str) {
    let lease = json(url, &["lock", "acquire", "job", "--lease-ms", "60000"]);
    let token = lease["token"].as_str().unwrap().to_string();
    assert_eq!(token.len(), 32);
    let first = lease["fence"].as_u64().unwrap();
    assert!(first > 0);
    cli(url, &["lock", "acquire", "job"])
        .failure()
        .says("held by another owner");
    assert!(
        cli(url, &["lock", "release", "job", "not-mine"])
            .failure()
            .message()
            .contains("not released")
    );
    assert_eq!(
        json(url, &["lock", "release", "job", &token]),
        json!({"released": true})
    );
    assert!(
        json(url, &["lock", "acquire", "job"])["fence"]
            .as_u64()
            .unwrap()
            > first
    );
}

/// `bloom create / add / exists / info / clear / load` through the binary at `url`.
fn bloom_commands(url: &str, dir: &std::path::Path) {
    let params = json(
        url,
        &[
            "bloom",
            "create",
            "emails",
            "--expected",
            "1000",
            "--fp-rate",
            "0.01",
            "--spread-blocks",
        ],
    );
    assert_eq!(params["n"], 1000);
    let added = json_lines(url, &["bloom", "add", "emails", "a@x", "b@x", "a@x"]);
    let new: Vec<bool> = added.iter().map(|a| a["new"].as_bool().unwrap()).collect();
    assert_eq!(new, [true, true, false]);
    let exists = json_lines(url, &["bloom", "exists", "emails", "a@x", "zz@x"]);
    assert_eq!(exists[0], json!({"item": "a@x", "maybe_present": true}));
    assert_eq!(exists[1]["maybe_present"], false);
    let info = json(url, &["bloom", "info", "emails"]);
    assert!(info["approx_count"].as_u64().unwrap() >= 2);
    assert_eq!(
        json(url, &["bloom", "clear", "emails"]),
        json!({"cleared": "emails"})
    );
    assert_eq!(
        json_lines(url, &["bloom", "exists", "emails", "a@x"])[0]["maybe_present"],
        false
    );
    let items = common::write_lines(dir, "items.txt", "item", 500);
    let items = items.to_str().unwrap();
    let load = json(url, &["bloom", "load", "emails", items, "--batch", "100"]);
    assert_eq!(load["position"], 500);
    // A false positive of the 1 % filter counts as not new.
    assert!(
        (490..=500).contains(&load["added"].as_u64().unwrap()),
        "{load}"
    );
    assert_eq!(
        json_lines(url, &["bloom", "exists", "emails", "item499"])[0]["maybe_present"],
        true
    );
    assert_eq!(
        json_lines(url, &["bloom", "add", "bloom_php", "x@y", "--jshash"])[0]["new"],
        true
    );
}

/// `hash plan / import / get / set / inspect` through the binary at `url`.
fn hash_commands(url: &str, dir: &std::path::Path) {
    let plan = json(url, &["hash", "plan", "--expected", "100000"]);
    assert!(plan["shards"].as_u64().unwrap() > 195, "{plan}");
    let lines = common::write_lines(dir, "users.txt", "user", 300);
    let lines = lines.to_str().unwrap();
    let import = json(url, &["hash", "import", "users", lines, "--batch", "64"]);
    assert_eq!(import["inserted"], 300);
    assert_eq!(import["layout"]["shards"], "1");
    assert_eq!(import["complete"], true);
    let got = json(url, &["hash", "get", "users", "0", "299", "300"]);
    assert_eq!(got, json!({"0": "user0", "299": "user299", "300": null}));
    assert_eq!(
        json(url, &["hash", "set", "users", "300", "late"]),
        json!({"field": "300", "new": true})
    );
    assert_eq!(
        cli(url, &["hash", "get", "users", "300"]).success().stdout,
        "300\tlate\n"
    );
    let inspect = json(url, &["hash", "inspect", "users"]);
    assert_eq!(
        (
            inspect["sampled_len"].as_u64(),
            inspect["converted"].as_u64()
        ),
        (Some(301), Some(0))
    );
    // The alias runs the same import: everything is present now.
    let again = json(url, &["import", "sharded-hash", "users", lines]);
    assert_eq!(again["already_present"], 300);
}

/// `map plan / put / get / ttl / sweep / inspect` through the binary at `url`.
fn map_commands(url: &str) {
    let plan = json(url, &["map", "plan", "sessions", "--expected", "10000"]);
    assert!(plan["plan"]["shards"].as_u64().unwrap() > 19, "{plan}");
    assert!(
        plan["path"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{plan}"
    );
    let at = ["--shards", "4"];
    let put = |args: &[&str]| json(url, &[&["map", "put", "sessions"], args, &at].concat());
    assert_eq!(
        put(&["s1", "alice", "--ttl-ms", "600000"]),
        json!({"field": "s1", "new": true})
    );
    assert_eq!(
        put(&["s2", "bob", "--ttl-ms", "1"]),
        json!({"field": "s2", "new": true})
    );
    assert_eq!(put(&["s3", "carol"]), json!({"field": "s3", "new": true}));
    std::thread::sleep(std::time::Duration::from_millis(5));
    let got = json(
        url,
        &[&["map", "get", "sessions", "s1", "s2", "s3"], &at[..]].concat(),
    );
    assert_eq!(got, json!({"s1": "alice", "s2": null, "s3": "carol"}));
    let ttl = json(url, &[&["map", "ttl", "sessions", "s1"], &at[..]].concat());
    assert!(
        ttl["ttl_ms"].as_u64().is_some_and(|ms| ms <= 600_000),
        "{ttl}"
    );
    assert_eq!(
        cli(url, &[&["map", "ttl", "sessions", "s3"], &at[..]].concat())
            .success()
            .stdout,
        "persistent\n"
    );
    let swept = json(url, &[&["map", "sweep", "sessions"], &at[..]].concat());
    assert_eq!(
        (swept["removed"].as_u64(), swept["live"].as_u64()),
        (Some(1), Some(2)),
        "{swept}"
    );
    let inspect = json(url, &[&["map", "inspect", "sessions"], &at[..]].concat());
    assert_eq!(inspect["converted"].as_u64(), Some(0));
}

/// `packed set / get` through the binary at `url`.
fn packed_commands(url: &str) {
    assert_eq!(
        json(
            url,
            &["packed", "set", "logins", "7", "300", "--width", "4"]
        )["layout"]["width"],
        4
    );
    let records = json_lines(url, &["packed", "get", "logins", "7", "8"]);
    assert_eq!(
        records[0],
        json!({"id": 7, "value": 300, "hex": "2c010000"})
    );
    assert_eq!(records[1]["value"], 0);
    json(url, &["packed", "set", "logins", "8", "0a000000", "--hex"]);
    assert_eq!(
        json_lines(url, &["packed", "get", "logins", "8"])[0]["value"],
        10
    );
}

/// `visits add / count / contains / distinct` through the binary at `url`.
fn visits_commands(url: &str) {
    let day = ["--day", "2099-01-01"];
    let added = json(
        url,
        &[
            "visits", "add", "site", "1", "2", "3", "--shards", "8", day[0], day[1],
        ],
    );
    assert_eq!(
        added,
        json!({"day": "2099-01-01", "shards": 8, "count": 3, "new": [true, true, true]})
    );
    // Without --shards the stored layout is used.
    let added = json(url, &["visits", "add", "site", "3", "4", day[0], day[1]]);
    assert_eq!(
        (added["count"].as_u64(), added["new"].clone()),
        (Some(4), json!([false, true]))
    );
    let planned = json(
        url,
        &[
            "visits",
            "add",
            "site",
            "4",
            "5",
            "--expected",
            "100",
            "--day",
            "2099-01-02",
        ],
    );
    // The new day's shards were planned against the server's limit, and
    // the report says so (a server that refuses CONFIG GET: the default).
    assert_eq!(
        planned["plan"],
        json!({"shards": 1, "max_intset_entries": 512, "limits_source": "Server"}),
        "{planned}"
    );
    assert_eq!(planned["shards"], 1);
    assert_eq!(
        json(url, &["visits", "count", "site", day[0], day[1]])["count"],
        4
    );
    assert_eq!(
        json(url, &["visits", "contains", "site", "2", day[0], day[1]])["counted"],
        true
    );
    assert_eq!(
        json(url, &["visits", "contains", "site", "9", day[0], day[1]])["counted"],
        false
    );
    let distinct = json(
        url,
        &[
            "visits",
            "distinct",
            "site",
            "--from",
            "2099-01-01",
            "--to",
            "2099-01-01",
        ],
    );
    assert_eq!(distinct["distinct"], 4);
}

/// `login-log record / the queries / export` through the binary at `url`.
fn login_log_commands(url: &str) {
    for (t, uid, d) in [
        ("client", "1001", "2024-02-29"),
        ("client", "1001", "2024-03-01"),
        ("office", "7", "2024-03-01"),
    ] {
        json(url, &["login-log", "record", t, uid, "--day", d]);
    }
    let q = |args: &[&str]| {
        let mut all = vec!["login-log", "query"];
        all.extend_from_slice(args);
        json(url, &all)
    };
    assert_eq!(
        q(&["day", "client", "1001", "2024-02-29"]),
        json!({"logged_in": true})
    );
    assert_eq!(q(&["month", "client", "1001", "2024-03"])["days"], 1);
    assert_eq!(
        q(&["range", "client", "1001", "2024-03-02", "2024-03-31"]),
        json!({"logged_in": false})
    );
    assert_eq!(
        q(&["days", "client", "1001", "2024-02-01", "2024-03-31"]),
        json!(["2024-02-29", "2024-03-01"])
    );
    assert_eq!(
        q(&["active", "client", "2024-02-01", "2024-03-31"]),
        json!([1001])
    );
    assert_eq!(
        q(&["all-active", "2024-03-01", "2024-03-01"]),
        json!([{"user_type": "client", "uid": 1001}, {"user_type": "office", "uid": 7}])
    );
    let export = cli(url, &["login-log", "export", "--today", "2024-03-05"]).success();
    assert_eq!(
        export.stdout,
        "month,user_type,uid,days\n2024-02,client,1001,29\n2024-03,client,1001,1\n2024-03,office,7,1\n"
    );
    let rows = json_lines(
        url,
        &[
            "login-log",
            "export",
            "--today",
            "2024-03-05",
            "--format",
            "json",
            "--month",
            "2024-03",
        ],
    );
    assert_eq!(
        rows[1],
        json!({"month": "2024-03", "user_type": "office", "uid": 7, "days": [1]})
    );
}

/// `signin mark / count / streak` through the binary at `url`.
fn signin_commands(url: &str) {
    for d in ["2024-03-01", "2024-03-02", "2024-03-04"] {
        json(url, &["signin", "mark", "100", "--day", d, "--tag", "app"]);
    }
    assert_eq!(
        json(
            url,
            &[
                "signin",
                "mark",
                "100",
                "--day",
                "2024-03-04",
                "--tag",
                "app"
            ]
        )["first"],
        false
    );
    assert_eq!(
        json(
            url,
            &["signin", "count", "--day", "2024-03-02", "--tag", "app"]
        )["count"],
        1
    );
    let streak = json(
        url,
        &[
            "signin",
            "streak",
            "100",
            "--from",
            "2024-03-01",
            "--to",
            "2024-03-04",
            "--tag",
            "app",
        ],
    );
    assert_eq!(
        streak,
        json!({"longest": 2, "longest_ends": "2024-03-02", "current": 1})
    );
    json(
        url,
        &["signin", "mark", "5", "--day", "2024-03-01", "--bare"],
    );
    assert_eq!(
        json(url, &["signin", "count", "--day", "2024-03-01", "--bare"])["count"],
        1
    );
}

/// `rolling add / recent / len` through the binary at `url`.
fn rolling_commands(url: &str) {
    json(
        url,
        &[
            "rolling",
            "add",
            "m42",
            "tx1",
            r#"{"cents": 125}"#,
            "--limit",
            "4",
            "--shard-size",
            "2",
        ],
    );
    // The ring is read from the key's index from now on.
    let added = json(url, &["rolling", "add", "m42", "tx2", "250"]);
    assert_eq!(added["slot"], 0);
    let recent = json_lines(url, &["rolling", "recent", "m42", "5"]);
    assert_eq!(
        recent,
        [
            json!({"field": "tx2", "value": 250}),
            json!({"field": "tx1", "value": {"cents": 125}})
        ]
    );
    assert_eq!(
        json(url, &["rolling", "len", "m42"]),
        json!({"key": "m42", "len": 2})
    );
    assert_eq!(json(url, &["rolling", "len", "none"])["len"], 0);
}
#[test]
fn every_command_on_one_server() {
    let server = support::server();
    let dir = common::temp_dir("server");
    every_command(&server.url(), &dir);
}

#[test]
fn every_command_on_any_node_of_a_cluster() {
    let cluster = support::cluster();
    let dir = common::temp_dir("cluster");
    every_command(&cluster.nodes()[2].url(), &dir);
    // The sharded keys really went to several nodes.
    let busy = cluster
        .nodes()
        .iter()
        .filter(|n| support::dbsize(&mut n.connection()) > 0)
        .count();
    assert_eq!(busy, 3);
}

#[test]
fn demo_runs_on_a_cluster_node() {
    let cluster = support::cluster();
    let run = cli(&cluster.nodes()[1].url(), &["demo"]).success();
    assert!(
        run.stdout.contains("connected to a Redis Cluster"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.trim_end().ends_with("demo finished"));
    assert!(
        !run.stdout.contains("Some(") && !run.stdout.contains("Ok("),
        "{}",
        run.stdout
    );
}

/// Runs `redis-patterns --json ARGS --url URL` with `input` on stdin.
fn with_stdin(url: &str, args: &[&str], input: &str) -> serde_json::Value {
    use std::io::Write;
    let mut child = common::bin()
        .arg("--json")
        .args(args)
        .args(["--url", url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bulk_commands_read_stdin() {
    let server = support::server();
    let url = server.url();
    let input: String = (0..100).map(|i| format!("v{i}\n")).collect();
    // A new hash from stdin needs its size (the file cannot be counted).
    cli(&url, &["hash", "import", "s", "-"])
        .failure()
        .says("--expected");
    let import = with_stdin(
        &url,
        &["hash", "import", "s", "-", "--expected", "100"],
        &input,
    );
    assert_eq!(
        (import["file"].as_str(), import["inserted"].as_u64()),
        (Some("stdin"), Some(100))
    );
    // Now the layout is stored: stdin needs nothing more.
    let again = with_stdin(&url, &["hash", "import", "s", "-", "--start", "90"], &input);
    assert_eq!(
        (again["lines"].as_u64(), again["already_present"].as_u64()),
        (Some(10), Some(10))
    );
    let load = with_stdin(
        &url,
        &["bloom", "load", "php_bitmap", "-", "--jshash"],
        &input,
    );
    assert_eq!(load["position"], 100);
    assert_eq!(
        json(&url, &["hash", "get", "s", "99"]),
        json!({"99": "v99"})
    );
}
