//! `redis-patterns bloom load` driven as a binary.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use redis_patterns::bloom::{Bloom, JsHashBloom};
use support::{Driver, owner};

/// Runs `redis-patterns bloom load NAME FILE ARGS.. --url URL`; (success, stdout, stderr).
fn cli_load(
    url: &str,
    name: &str,
    file: &std::path::Path,
    args: &[&str],
) -> (bool, String, String) {
    let mut all = vec!["bloom", "load", name, file.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = common::cli(url, &all);
    (run.ok(), run.stdout, run.stderr)
}

#[test]
fn cli_jshash_load_skips_empty_lines_and_counts_them_in_the_position() {
    let server = support::server();
    let dir = common::temp_dir("cli-empty");
    let path = dir.join("lines.txt");
    // 12 lines: empty ones inside batches, at a batch start, CRLF ones, and a
    // trailing empty line; plus one line longer than --max-line.
    let text = "a@x\n\nb@x\r\n\r\nc@x\nd@x\n\ne@x\n";
    let long = "z".repeat(100);
    std::fs::write(&path, format!("{text}{long}\nf@x\ng@x\n\n")).unwrap();
    let url = server.url();
    skipped_lines_fail_the_run_unless_allowed(&url, &path, &long);
    a_resumed_load_skips_the_lines_before_its_start(&url, &path);
    sized_filters_keep_empty_lines_as_items(&url, &path);
}

/// Skipped lines fail the run unless they are allowed; either way they are
/// counted and the position covers them.
fn skipped_lines_fail_the_run_unless_allowed(url: &str, path: &std::path::Path, long: &str) {
    let args = ["--jshash", "--batch", "2", "--max-line", "64"];
    let (ok, stdout, stderr) = cli_load(url, "bloom_cli", path, &args);
    assert!(!ok, "{stdout} {stderr}");
    assert!(
        stderr.contains("5 lines were skipped") && stderr.contains("--allow-rejects"),
        "{stderr}"
    );
    assert!(
        stdout.contains("last position done: 12") && stdout.contains(": 7 new"),
        "{stdout}"
    );
    let allowed = [&args[..], &["--allow-rejects"]].concat();
    let (ok, stdout, stderr) = cli_load(url, "bloom_cli", path, &allowed);
    assert!(ok, "{stdout} {stderr}");
    assert!(stdout.contains("last position done: 12"), "{stdout}");
    assert!(stdout.contains("skipped 4 empty lines"), "{stdout}");
    assert!(
        stdout.contains("skipped 1 lines longer than --max-line 64 bytes (first: line 9)"),
        "{stdout}"
    );
    assert!(stdout.contains(": 0 new"), "{stdout}");
    let php = JsHashBloom::new("bloom_cli").unwrap();
    let present = ["a@x", "b@x", "c@x", "d@x", "e@x", "f@x", "g@x"];
    for mut d in support::drivers(url) {
        assert!(
            d.run(php.multi_exists(&present))
                .unwrap()
                .iter()
                .all(|&b| b)
        );
        assert!(!d.run(php.exists(long)).unwrap());
    }
}

/// Resuming at a line position skips exactly those lines: after line 10
/// only g@x (already there) and the trailing empty line remain; a start
/// beyond the end of the input settles only the lines there are.
fn a_resumed_load_skips_the_lines_before_its_start(url: &str, path: &std::path::Path) {
    let (ok, stdout, stderr) = cli_load(
        url,
        "bloom_cli",
        path,
        &["--jshash", "--start", "10", "--allow-rejects"],
    );
    assert!(ok, "{stdout} {stderr}");
    assert!(stdout.contains(": 0 new"), "{stdout}");
    assert!(stdout.contains("skipped 1 empty lines"), "{stdout}");
    assert!(stdout.contains("last position done: 12"), "{stdout}");
    let (ok, stdout, stderr) = cli_load(url, "bloom_cli", path, &["--jshash", "--start", "99"]);
    assert!(ok, "{stdout} {stderr}");
    assert!(stdout.contains("last position done: 12"), "{stdout}");
}

/// Sized filters keep empty lines as items (only JSHash mode refuses them),
/// and a fresh sized load from a resume point adds only the rest.
fn sized_filters_keep_empty_lines_as_items(url: &str, path: &std::path::Path) {
    let (ok, stdout, stderr) = cli_load(
        url,
        "sized",
        path,
        &["--expected", "1000", "--fp-rate", "0.01", "--start", "5"],
    );
    assert!(ok, "{stdout} {stderr}");
    assert!(stdout.contains("last position done: 12"), "{stdout}");
    for mut d in support::drivers(url) {
        let bf = d.run(Bloom::open("sized")).unwrap();
        assert!(
            d.run(bf.multi_exists(&["d@x", "e@x", "f@x", "g@x", ""]))
                .unwrap()
                .iter()
                .all(|&b| b)
        );
        assert!(!d.run(bf.exists("c@x")).unwrap());
        assert!(!d.run(bf.exists("a@x")).unwrap());
    }
}

fn items(prefix: &str, range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn cli_bloom_load_finds_a_cluster_and_follows_the_keys() {
    let cluster = support::cluster();
    // The CLI finds out it talks to a cluster node and follows the keys.
    let dir = common::temp_dir("cli-cluster");
    let path = dir.join("lines.txt");
    let lines = items("line", 0..3000);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    for args in [
        &[
            "cli-wide",
            "--expected",
            "1000000",
            "--fp-rate",
            "0.01",
            "--spread-blocks",
            // Several blocks on every server (libc plans one where it can).
            "--max-block-bytes",
            "524288",
        ][..],
        &["bloom_cli", "--jshash"][..],
    ] {
        let (ok, stdout, stderr) = cli_load(
            &cluster.nodes()[0].url(),
            args[0],
            &path,
            &[&args[1..], &["--batch", "500"]].concat(),
        );
        assert!(ok, "{stdout} {stderr}");
        assert!(stdout.contains("last position done: 3000"), "{stdout}");
    }
    let url = cluster.nodes()[0].url();
    for mut d in support::drivers(&url) {
        assert!(d.is_cluster());
        check_cluster_load(&mut d, &cluster, &lines);
    }
}

fn check_cluster_load(
    d: &mut Driver,
    cluster: &redis_patterns_test_support::LocalCluster,
    lines: &[String],
) {
    let cli = d.run(Bloom::open("cli-wide")).unwrap();
    let owners: std::collections::BTreeSet<usize> =
        cli.block_keys().iter().map(|k| owner(cluster, k)).collect();
    assert!(owners.len() >= 2, "{:?}", cli.block_keys());
    assert!(d.run(cli.multi_exists(lines)).unwrap().iter().all(|&b| b));
    assert!((2900..=3100).contains(&d.run(cli.approx_count()).unwrap()));
    let loaded = JsHashBloom::new("bloom_cli").unwrap();
    assert!(
        d.run(loaded.multi_exists(lines))
            .unwrap()
            .iter()
            .all(|&b| b)
    );
}
