//! `redis-patterns import sharded-hash` driven as a binary, on one server and
//! on a real cluster.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use common::{bin, write_file};
use redis_patterns::sharded_hash::ShardedHash;

/// Runs `redis-patterns import sharded-hash ARGS.. FILE EXTRA.. --url URL`.
fn import(url: &str, args: &[&str], file: &std::path::Path, extra: &[&str]) -> common::Run {
    let all = [
        &["import", "sharded-hash"][..],
        args,
        &[file.to_str().unwrap()],
        extra,
    ];
    common::cli(url, &all.concat())
}

#[test]
fn cli_import_reports_counts_and_a_missing_file_clearly() {
    let server = support::server();
    let mut con = server.connection();
    let dir = common::temp_dir("cli");
    let path = write_file(&dir, "lines.txt", &[b"a\n\nb\nc\n"]);
    // The URL from REDIS_URL.
    let out = common::run(
        bin()
            .args(["import", "sharded-hash", "cli"])
            .arg(&path)
            .env("REDIS_URL", server.url()),
    );
    let stdout = &out.stdout;
    // A rejected line fails the run (every count still printed) unless
    // rejects are allowed.
    let stderr = &out.stderr;
    assert_eq!(out.status, Some(1), "{stdout} {stderr}");
    assert!(
        stderr.contains("1 of 4 lines were rejected") && stderr.contains("--allow-rejects"),
        "{stderr}"
    );
    assert!(stdout.contains("inserted 3\n"), "{stdout}");
    assert!(stdout.contains("already_present 0\n"), "{stdout}");
    assert!(stdout.contains("rejected 1\n"), "{stdout}");
    assert!(stdout.contains("line 2: blank line"), "{stdout}");
    // Not a terminal: no progress bar on stderr.
    assert!(!out.stderr.contains('\r'));
    let h = ShardedHash::new("cli", 1).unwrap();
    for mut d in support::drivers(&server.url()) {
        assert_eq!(d.run(h.get::<String>("3")).unwrap().as_deref(), Some("c"));
    }

    let before = support::all_keys(&mut con);
    let out = import(
        &server.url(),
        &["cli"],
        &dir.join("does-not-exist.txt"),
        &[],
    );
    assert!(!out.ok());
    let stderr = out.stderr;
    assert!(
        stderr.contains("cannot open") && stderr.contains("does-not-exist.txt"),
        "{stderr}"
    );
    assert_eq!(support::all_keys(&mut con), before);
    for mut d in support::drivers(&server.url()) {
        assert_eq!(d.run(h.get::<String>("0")).unwrap().as_deref(), Some("a"));
    }
}

#[test]
fn cli_import_finds_a_cluster_by_itself() {
    let cluster = support::cluster();
    let dir = common::temp_dir("cli-cluster");
    let text: String = (0..300).map(|i| format!("line{i}\n")).collect();
    let path = write_file(&dir, "lines.txt", &[text.as_bytes(), b"\n"]);
    let tsv = write_file(&dir, "pairs.tsv", &[b"a\t1\nb\t2\nc\t3\n"]);
    let url = cluster.nodes()[1].url();
    let run = |args: &[&str], file: &std::path::Path| {
        let out = import(&url, args, file, &["--allow-rejects"]);
        (out.ok(), out.stdout, out.stderr)
    };

    // Detected from the node's INFO cluster.
    let (ok, stdout, stderr) = run(&["auto", "--shards", "16"], &path);
    assert!(ok, "{stdout} {stderr}");
    assert!(stdout.contains("topology cluster\n"), "{stdout}");
    assert!(stdout.contains("inserted 300\n"), "{stdout}");
    assert!(stdout.contains("rejected 1\n"), "{stdout}");
    let h = ShardedHash::new("auto", 16).unwrap();
    for mut d in support::drivers(&url) {
        assert!(d.is_cluster());
        assert_eq!(d.run(h.len()).unwrap(), 300);
        assert_eq!(
            d.run(h.get_many::<String, _>(&["0", "299", "300"]))
                .unwrap(),
            [Some("line0".to_string()), Some("line299".to_string()), None]
        );
    }
    // Run again: everything is already present.
    let (ok, stdout, _) = run(&["auto", "--shards", "16"], &path);
    assert!(ok && stdout.contains("already_present 300\n"), "{stdout}");

    // Not strict, TSV.
    let (ok, stdout, stderr) = run(&["pairs", "--tsv", "--shards", "8", "--no-strict"], &tsv);
    assert!(ok, "{stdout} {stderr}");
    assert!(
        stdout.contains("topology cluster\n") && stdout.contains("inserted 3\n"),
        "{stdout}"
    );
    let pairs = ShardedHash::new("pairs", 8).unwrap();
    for mut d in support::drivers(&url) {
        assert_eq!(
            d.run(pairs.get_many::<String, _>(&["a", "b", "c"]))
                .unwrap(),
            [
                Some("1".to_string()),
                Some("2".to_string()),
                Some("3".to_string())
            ]
        );
    }

    // The shards spread over every node.
    let per_node = support::keys_per_node(&cluster);
    assert!(per_node.iter().all(|&n| n > 0), "{per_node:?}");

    // No flag forces a topology any more (forcing one server onto a
    // cluster node only made the other nodes' slots fail with MOVED): the
    // old flags are refused before anything is sent.
    for flag in [&["--topology", "standalone"][..], &["--cluster"][..]] {
        let args: Vec<&str> = ["forced", "--shards", "16"]
            .iter()
            .chain(flag)
            .copied()
            .collect();
        let (ok, stdout, stderr) = run(&args, &path);
        assert!(!ok, "{stdout}");
        assert!(stderr.contains(flag[0]), "{stderr}");
    }
    assert_eq!(
        support::drivers(&url)
            .remove(0)
            .run(ShardedHash::new("forced", 16).unwrap().len())
            .unwrap(),
        0
    );
}

/// The commands the server ran since the last `CONFIG RESETSTAT`, from
/// `INFO commandstats` (e.g. `config|resetstat`).
fn commands_run(con: &mut redis::Connection) -> Vec<String> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.to_string()))
        .collect()
}

#[test]
fn cli_import_refuses_bad_arguments_before_touching_the_server() {
    let server = support::server();
    let mut con = server.connection();
    let path = write_file(&common::temp_dir("cli-bad"), "lines.txt", &[b"a\nb\n"]);
    let cases: [(&[&str], &str); 4] = [
        (
            &["cli", "--shards", "0"],
            "invalid shard count: must be at least 1",
        ),
        (&[""], "invalid base: must not be empty"),
        (&["", "--shards", "4"], "invalid base: must not be empty"),
        (&["cli", "--batch", "0"], "--batch must be at least 1"),
    ];
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    for (args, message) in cases {
        let out = import(&server.url(), &args[..1], &path, &args[1..]);
        let stderr = out.stderr;
        assert_eq!(out.status, Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // No command but the test's own reached the server, and nothing was written.
    assert_eq!(commands_run(&mut con), ["config|resetstat"]);
    assert_eq!(support::dbsize(&mut con), 0);
}
