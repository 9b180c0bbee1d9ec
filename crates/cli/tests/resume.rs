//! Bulk commands that keep their layout and resume: a second import with
//! another shard count is refused with nothing written, a server killed in
//! the middle of an import (AOF on) leaves a printed position from which
//! `--start` completes it, and Ctrl-C stops between batches with the same.

mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::Read;
use std::process::{Child, Stdio};

use common::{bin, cli, json, write_lines};
use redis_patterns_test_support::LocalServer;

/// The arguments of `hash import users FILE EXTRA..`.
fn import_users<'a>(file: &'a std::path::Path, extra: &[&'a str]) -> Vec<&'a str> {
    [&["hash", "import", "users", file.to_str().unwrap()], extra].concat()
}

/// A server that keeps every write it answered (AOF, fsync always) when it
/// is killed.
fn durable_server() -> LocalServer {
    support::server_with(&["--appendonly", "yes", "--appendfsync", "always"])
}

#[test]
fn an_import_of_an_input_it_cannot_read_is_refused_before_anything_is_written() {
    let server = support::server();
    let url = server.url();
    let dir = common::temp_dir("unreadable");
    let refused = cli(&url, &import_users(&dir, &["--shards", "4"])).failure();
    assert!(refused.message().contains("read"), "{}", refused.message());
    assert!(
        !refused.stderr.contains("imported") && !refused.stdout.contains("imported"),
        "no summary of an import that did not happen: {} {}",
        refused.stdout,
        refused.stderr
    );
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.connection())
        .unwrap();
    assert!(keys.is_empty(), "nothing written, no layout key: {keys:?}");
    // The next import with another shard count is not refused.
    let file = write_lines(&dir, "users.txt", "u", 10);
    json(&url, &import_users(&file, &["--shards", "8"]));
}

#[test]
fn a_second_import_with_another_shard_count_is_refused_and_writes_nothing() {
    let server = support::debug_server();
    let url = server.url();
    let dir = common::temp_dir("layouts");
    let big = write_lines(&dir, "big.txt", "big", 5000);
    let small = write_lines(&dir, "small.txt", "small", 1000);
    let first = json(&url, &import_users(&big, &[]));
    let shards = first["layout"]["shards"].as_str().unwrap().to_string();
    assert_ne!(shards, "3");
    let before = support::digest(&mut server.connection());
    let refused = cli(&url, &import_users(&small, &["--shards", "3"])).failure();
    let message = refused.message();
    assert!(
        message.contains(&format!("shards={shards}"))
            && message.contains("shards=3")
            && message.contains("users:meta"),
        "{message}"
    );
    assert!(message.contains("drop --shards"), "{message}");
    assert_eq!(
        support::digest(&mut server.connection()),
        before,
        "the refused import wrote something"
    );
    // Reading with the wrong shard count is refused too.
    cli(&url, &["hash", "get", "users", "0", "--shards", "3"]).failure();
    // Without --shards the stored layout is used.
    let second = json(&url, &import_users(&small, &[]));
    assert_eq!(second["layout"]["shards"], shards);
    assert_eq!(
        (
            second["already_present"].as_u64(),
            second["inserted"].as_u64()
        ),
        (Some(1000), Some(0))
    );
    let got = json(&url, &["hash", "get", "users", "0", "4999"]);
    assert_eq!(got, serde_json::json!({"0": "big0", "4999": "big4999"}));
}

#[test]
fn the_layout_is_kept_on_a_cluster_too() {
    let cluster = support::cluster();
    let url = cluster.nodes()[1].url();
    let dir = common::temp_dir("layouts-cluster");
    let big = write_lines(&dir, "big.txt", "big", 3000);
    let small = write_lines(&dir, "small.txt", "small", 10);
    let first = json(&url, &import_users(&big, &[]));
    let keys = |c: &redis_patterns_test_support::LocalCluster| -> i64 {
        c.nodes()
            .iter()
            .map(|n| support::dbsize(&mut n.connection()))
            .sum()
    };
    let before = keys(&cluster);
    let refused = cli(&url, &import_users(&small, &["--shards", "2"])).failure();
    assert!(refused.message().contains("shards=2"), "{}", refused.stderr);
    assert_eq!(keys(&cluster), before);
    let second = json(&url, &import_users(&small, &[]));
    assert_eq!(second["layout"], first["layout"]);
    assert_eq!(second["already_present"], 10);
}

/// Starts `redis-patterns ARGS --url URL` with its output piped.
fn spawn(url: &str, args: &[&str]) -> Child {
    bin()
        .args(args)
        .args(["--url", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the binary")
}

/// Fields in the shards `h:0..h:3`.
fn fields(con: &mut redis::Connection) -> i64 {
    (0..4)
        .map(|i| {
            redis::cmd("HLEN")
                .arg(format!("h:{i}"))
                .query::<i64>(con)
                .unwrap()
        })
        .sum()
}

/// Pauses the server's writes once `done(con)` says the import's first
/// batch was answered (a later batch's writes arrived), so that the import
/// is caught in the middle, with a position past 0, whatever the machine's
/// speed.
fn catch_in_the_middle(
    server: &LocalServer,
    child: &mut Child,
    done: impl Fn(&mut redis::Connection) -> bool,
) {
    let mut con = server.connection();
    while !done(&mut con) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its second batch"
        );
    }
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(60_000)
        .arg("WRITE")
        .query(&mut con)
        .unwrap();
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run finished before it could be interrupted: give it a bigger file"
    );
}

fn finish(mut child: Child) -> common::Run {
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    common::Run {
        status: status.code(),
        stdout,
        stderr,
    }
}

/// The position in `resume with --start N`.
fn resume_position(run: &common::Run) -> u64 {
    let message = run.message();
    let at = message
        .find("resume with --start ")
        .unwrap_or_else(|| panic!("no position in: {message}"));
    message[at + "resume with --start ".len()..]
        .trim()
        .parse()
        .unwrap()
}

const LINES: usize = 200_000;

/// The import the interruption tests cut: not strict (one HSETNX per line)
/// into 4 shards that are quick to count, 500 lines per batch.
fn import_args(path: &str) -> [&str; 9] {
    [
        "hash",
        "import",
        "h",
        path,
        "--shards",
        "4",
        "--no-strict",
        "--batch",
        "500",
    ]
}

#[test]
fn an_import_cut_by_a_dead_server_resumes_from_its_printed_position() {
    let mut server = durable_server();
    let url = server.url();
    let file = write_lines(&common::temp_dir("killed"), "lines.txt", "v", LINES);
    let path = file.to_str().unwrap();
    let args = import_args(path);
    let mut child = spawn(&url, &[&args[..], &["--retries", "2"]].concat());
    catch_in_the_middle(&server, &mut child, |con| fields(con) > 500);
    server.kill();
    let run = finish(child).failure();
    let position = resume_position(&run);
    assert!(
        run.message()
            .contains("lost the connection to redis://127.0.0.1:")
            || run
                .message()
                .contains("cannot connect to redis://127.0.0.1:"),
        "{}",
        run.stderr
    );
    assert!(position > 0 && position < LINES as u64, "{position}");
    assert!(
        run.stdout.contains(&format!("position {position}\n")),
        "{}",
        run.stdout
    );
    // The data of every completed batch survived (AOF): resume from there.
    server.resume().unwrap();
    let start = position.to_string();
    let resumed = json(&url, &[&args[..], &["--start", &start]].concat());
    assert_eq!(resumed["complete"], true);
    assert_eq!(resumed["lines"], LINES as u64 - position);
    assert_eq!(
        resumed["inserted"].as_u64().unwrap() + resumed["already_present"].as_u64().unwrap(),
        LINES as u64 - position
    );
    // Every line is there, exactly once, under its own line index.
    let inspect = json(&url, &["hash", "inspect", "h"]);
    assert_eq!(inspect["sampled_len"], LINES as u64);
    let last = (LINES - 1).to_string();
    let (before, at) = ((position - 1).to_string(), position.to_string());
    let got = json(&url, &["hash", "get", "h", "0", &before, &at, &last]);
    assert_eq!(got[&before], format!("v{before}"));
    assert_eq!(got[&at], format!("v{at}"));
    assert_eq!(got[&last], format!("v{last}"));
}

#[test]
fn ctrl_c_stops_an_import_between_batches_with_its_position() {
    let server = support::server();
    let url = server.url();
    let file = write_lines(&common::temp_dir("ctrl-c"), "lines.txt", "v", LINES);
    let path = file.to_str().unwrap();
    let args = import_args(path);
    let mut child = spawn(&url, &args);
    catch_in_the_middle(&server, &mut child, |con| fields(con) > 500);
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut server.connection())
        .unwrap();
    let run = finish(child);
    assert_eq!(run.status, Some(130), "{}", run.stderr);
    assert!(
        run.message()
            .starts_with("interrupted (Ctrl-C); the first "),
        "{}",
        run.stderr
    );
    let position = resume_position(&run);
    assert!(position > 0 && position < LINES as u64);
    let start = position.to_string();
    let resumed = json(&url, &[&args[..], &["--start", &start]].concat());
    assert_eq!(resumed["inserted"], LINES as u64 - position);
    assert_eq!(
        json(&url, &["hash", "inspect", "h"])["sampled_len"],
        LINES as u64
    );
}

#[test]
fn a_bloom_load_cut_by_a_dead_server_resumes_from_its_printed_position() {
    let mut server = durable_server();
    let url = server.url();
    let file = write_lines(
        &common::temp_dir("bloom-killed"),
        "items.txt",
        "item",
        LINES,
    );
    let path = file.to_str().unwrap();
    json(
        &url,
        &[
            "bloom",
            "create",
            "bf",
            "--expected",
            "200000",
            "--fp-rate",
            "0.001",
        ],
    );
    let mut child = spawn(
        &url,
        &[
            "bloom",
            "load",
            "bf",
            path,
            "--batch",
            "500",
            "--retries",
            "1",
        ],
    );
    // A batch of 500 items sets at most 500 k bits: more than that set
    // means the second batch is being written, so the first was answered.
    let bits = |con: &mut redis::Connection| -> i64 {
        let keys: Vec<String> = redis::cmd("KEYS").arg("bloom:{bf}:*").query(con).unwrap();
        keys.iter()
            .map(|k| redis::cmd("BITCOUNT").arg(k).query::<i64>(con).unwrap())
            .sum()
    };
    let k: i64 = redis::cmd("HGET")
        .arg("bloom:{bf}")
        .arg("k")
        .query(&mut server.connection())
        .unwrap();
    let sentinels = bits(&mut server.connection());
    catch_in_the_middle(&server, &mut child, |con| bits(con) > sentinels + 500 * k);
    server.kill();
    let run = finish(child).failure();
    let position = resume_position(&run);
    assert!(position > 0 && position < LINES as u64, "{position}");
    server.resume().unwrap();
    let resumed = json(
        &url,
        &[
            "bloom",
            "load",
            "bf",
            path,
            "--start",
            &position.to_string(),
        ],
    );
    assert_eq!(resumed["position"], LINES as u64);
    // Every item is in the filter: none of them answers absent.
    let sample: Vec<String> = (0..LINES)
        .step_by(997)
        .map(|i| format!("item{i}"))
        .collect();
    let mut args = vec!["bloom", "exists", "bf"];
    args.extend(sample.iter().map(String::as_str));
    let answers = common::json_lines(&url, &args);
    assert!(answers.iter().all(|a| a["maybe_present"] == true));
}
