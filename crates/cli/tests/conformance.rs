//! The conformance suite (`tests/conformance/cases.json` of the repository)
//! on the generated Python client with the real interpreter: every case on
//! one server and on a 3-node cluster, with redis-py's sync and
//! `redis.asyncio` clients; the cross-language cases written by the Rust API
//! and read by Python, and the reverse; and the package checks: `pip install
//! DIR` installs it, `mypy --strict` accepts it. Needs python3 with redis-py
//! and mypy on PYTHONPATH (`.ci/run` installs them). The TypeScript client's
//! runs (node + ioredis, cross with Rust and Python) are in `typescript`.

mod common;
#[path = "conformance/denied.rs"]
mod denied;
#[allow(dead_code)]
#[path = "../../../tests/conformance/dispatch.rs"]
mod dispatch;
#[allow(dead_code)]
#[path = "../../../tests/conformance/engine.rs"]
mod engine;
#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{export, hlens_and_reads, php, python, repo_root, temp_dir};
use engine::{Cases, Part, Target};
use redis_patterns_test_support::LocalServer;

fn cases_path() -> PathBuf {
    repo_root().join("tests/conformance/cases.json")
}

fn runner() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/conformance.py")
}

fn exported(what: &str) -> PathBuf {
    let dir = temp_dir(&format!("py-{what}"));
    export(Some("python"), &dir);
    dir
}

/// Runs a client's conformance runner `cmd` (the client's name: `client`)
/// to its end; prints its summary line and failures; panics when a case
/// failed.
pub(crate) fn run_runner(cmd: &mut Command, client: &str) -> String {
    let stdout = support::stdout_of(cmd, &format!("the {client} client's conformance run"));
    println!("{stdout}");
    stdout
}

/// Runs the Python runner on the client in `dir` (see [`run_runner`]).
fn run_python(dir: &Path, urls: &[String], flags: &[&str]) -> String {
    run_runner(
        python(dir, "redis")
            .arg(runner())
            .arg(cases_path())
            .args(urls)
            .args(flags),
        "Python",
    )
}

/// A runner's summary of every case on the server (or cluster node) of
/// `url`: see [`expect_cases`].
fn expect_all(stdout: &str, url: &str) {
    let cases = Cases::load(&cases_path());
    let skips = engine::skipped_on(&cases, &Target::server(url), Part::All);
    expect_cases(stdout, cases.cases.len(), skips);
}

/// A runner's summary (`N passed, 0 failed`, then `, S skipped (...)` where
/// the server lacks a capability some cases need) says every one of the
/// `total` cases passed or was skipped, at least one ran, and it skipped
/// exactly the `skips` cases the crate finds the server lacks a capability
/// for (none where it has them all: a runner that misreads the server
/// cannot pass by skipping).
fn expect_cases(stdout: &str, total: usize, skips: usize) {
    let summary = stdout
        .lines()
        .filter(|l| l.starts_with("conformance "))
        .find_map(|l| l.split_once("): ").map(|(_, s)| s))
        .unwrap_or("");
    let number = |word: &str| -> usize {
        summary
            .split(", ")
            .find_map(|part| {
                let mut words = part.split(' ');
                let n = words.next()?;
                (words.next() == Some(word)).then(|| n.parse().ok())?
            })
            .unwrap_or(0)
    };
    let (passed, skipped) = (number("passed"), number("skipped"));
    assert!(
        summary.contains(" passed, 0 failed") && passed > 0 && passed + skipped == total,
        "not every one of the {total} cases passed:\n{stdout}"
    );
    assert_eq!(
        skipped, skips,
        "the runner skipped {skipped} cases; the server lacks a capability of {skips}:\n{stdout}"
    );
}

/// The script-coverage check after a run (shared with the Rust API's runs
/// in `tests/conformance.rs`).
pub(crate) use engine::expect_every_script_ran;

/// Every case on a fresh server (`cluster`: a 3-node cluster) by `run` on
/// the client `export` writes, once per run of `runs` (its name in what is
/// printed, its flags; `--cluster` goes before them on a cluster): each
/// case passed or was skipped for a capability the server lacks, and every
/// script ran.
pub(crate) fn passes_every_case(
    cluster: bool,
    export: fn(&str) -> PathBuf,
    run: Runner,
    runs: &[(&str, &[&str])],
) {
    let topology = if cluster { "cluster" } else { "server" };
    let dir = export(&format!("conformance-{topology}"));
    let every_run = |urls: &[String]| {
        for (client, flags) in runs {
            let mut all = if cluster { vec!["--cluster"] } else { vec![] };
            all.extend_from_slice(flags);
            expect_all(&run(&dir, urls, &all), &urls[0]);
            expect_every_script_ran(&format!("{client} ({topology})"), urls, cluster, &[]);
        }
    };
    if cluster {
        every_run(&support::cluster().urls());
    } else {
        every_run(&[support::server().url()]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client's two tests of [`passes_every_case`]: `$server` on a server,
/// `$cluster` on a cluster.
macro_rules! every_case_tests {
    ($server:ident, $cluster:ident: $export:expr, $run:expr, $runs:expr) => {
        #[test]
        fn $server() {
            passes_every_case(false, $export, $run, $runs);
        }

        #[test]
        fn $cluster() {
            passes_every_case(true, $export, $run, $runs);
        }
    };
}

// The TypeScript client's tests (after the macro, which they use).
#[path = "conformance/typescript.rs"]
mod typescript;

/// A client in the cross-language cases on one server: it writes every
/// cross-language case's write part, or reads back (and checks) every read
/// part. A generated client's exported directory goes with it.
pub(crate) struct Side {
    name: &'static str,
    write: Box<dyn Fn()>,
    read: Box<dyn Fn()>,
    dir: Option<PathBuf>,
}

/// The cross-language cases, and how many of them the server of `url`
/// lacks a capability for (see `expect_cases`).
fn cross_count(url: &str) -> (usize, usize) {
    let cases = Cases::load(&cases_path());
    let n = cases.cases.iter().filter(|c| engine::is_cross(c)).count();
    assert!(n > 0, "no cross-language case");
    (
        n,
        engine::skipped_on(&cases, &Target::server(url), Part::Read),
    )
}

/// A client's runner on the client exported in a directory.
pub(crate) type Runner = fn(&Path, &[String], &[&str]) -> String;

impl Side {
    /// The Rust API on the server of `url`.
    pub(crate) fn rust(url: &str) -> Side {
        let (cross, _) = cross_count(url);
        let run = move |target: &Target, part| {
            engine::run_selected(&Cases::load(&cases_path()), target, part, false)
        };
        let target = Target::server(url);
        let write_target = target.clone();
        Side {
            name: "rust",
            write: Box::new(move || run(&write_target, Part::Write).assert_passed()),
            read: Box::new(move || {
                let read = run(&target, Part::Read);
                println!("rust read: {}", read.summary());
                read.assert_passed();
                assert_eq!(read.passed + read.skipped, cross);
            }),
            dir: None,
        }
    }

    /// A generated client, exported in `dir`, run by `run` on the server
    /// of `url`.
    pub(crate) fn client(name: &'static str, url: &str, dir: PathBuf, run: Runner) -> Side {
        let urls = vec![url.to_string()];
        let (cross, skips) = cross_count(url);
        let (read_dir, read_urls) = (dir.clone(), urls.clone());
        let write_dir = dir.clone();
        Side {
            name,
            write: Box::new(move || {
                run(&write_dir, &urls, &["--part=write"]);
            }),
            read: Box::new(move || {
                expect_cases(&run(&read_dir, &read_urls, &["--part=read"]), cross, skips);
            }),
            dir: Some(dir),
        }
    }

    /// The Python client (exported for the test `tag`).
    pub(crate) fn python(url: &str, tag: &str) -> Side {
        Side::client("python", url, exported(tag), run_python)
    }

    /// The PHP client (exported for the test `tag`).
    pub(crate) fn php(url: &str, tag: &str) -> Side {
        Side::client("php", url, php_exported(tag), run_php)
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Data written by `a` is read back by `b`, and the reverse: every
/// cross-language case's write part with one, then its read part with the
/// other (no flush between).
pub(crate) fn read_back_both_ways(a: &Side, b: &Side) {
    for (from, to) in [(a, b), (b, a)] {
        (from.write)();
        (to.read)();
        println!("cross {} -> {}: done", from.name, to.name);
    }
}

every_case_tests!(
    python_passes_every_case_on_a_server, python_passes_every_case_on_a_cluster:
    exported, run_python, &[("python", &[]), ("python asyncio", &["--asyncio"])]
);

/// Data written by the Rust API is read back by Python, and the reverse:
/// every cross-language case's write part with one, then its read part with
/// the other (no flush between).
#[test]
fn python_and_rust_read_back_what_the_other_wrote() {
    let server = support::server();
    let python = Side::python(&server.url(), "conformance-cross");
    read_back_both_ways(&Side::rust(&server.url()), &python);
}

/// `pip install DIR` installs the exported package (scripts, manifest and
/// py.typed included), and `mypy --strict` accepts it.
#[test]
fn the_python_package_installs_and_type_checks() {
    let dir = exported("package");
    let target = temp_dir("py-installed");
    support::stdout_of(
        python(&dir, "pip")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
            ])
            .arg("--target")
            .arg(&target)
            .arg(&dir),
        "pip install of the exported client",
    );
    for f in [
        "py.typed",
        "manifest.json",
        "lua/lock/acquire.lua",
        "_ops/lock.py",
    ] {
        assert!(
            target.join("redis_patterns").join(f).exists(),
            "pip did not install {f}"
        );
    }
    let report = support::stdout_of(
        python(&dir, "mypy")
            .args([
                "-m",
                "mypy",
                "--strict",
                "--no-incremental",
                "redis_patterns",
            ])
            .current_dir(&dir),
        "mypy --strict of the client",
    );
    println!(
        "mypy --strict: {}",
        report.lines().last().unwrap_or_default()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&target);
}

/// A KeyboardInterrupt that lands in the Python sync driver between two
/// steps of a waiting acquire ends the run there: its wake subscription is
/// closed (interrupted while subscribing) or kept for the next run (while
/// waiting), not left open for the garbage collector, so a second wait on
/// the lock leaves one subscriber on its channel
/// (`tests/clients/interrupt.py`).
#[test]
fn python_interrupted_between_steps_ends_its_subscription() {
    let server = support::server();
    let dir = exported("interrupt");
    let out = python(&dir, "redis")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/interrupt.py"))
        .arg(server.url())
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "an interrupted run left its subscription:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// The PHP client (phpredis): every case on a server and a cluster, the
// cross-language cases with Rust and with Python both ways, composer
// validate --strict, and one round trip per node for a fan-out.

fn php_exported(what: &str) -> PathBuf {
    let dir = temp_dir(&format!("php-{what}"));
    export(Some("php"), &dir);
    dir
}

/// Runs the PHP runner on the client in `dir` (see [`run_runner`]).
fn run_php(dir: &Path, urls: &[String], flags: &[&str]) -> String {
    let runner = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/conformance.php");
    run_runner(
        php()
            .arg(runner)
            .arg(dir)
            .arg(cases_path())
            .args(urls)
            .args(flags),
        "PHP",
    )
}

every_case_tests!(
    php_passes_every_case_on_a_server, php_passes_every_case_on_a_cluster:
    php_exported, run_php, &[("php", &[])]
);

/// Data written by the Rust API and by Python is read back by PHP, and the
/// reverse: every cross-language case's write part with one client, then
/// its read part with the other (no flush between).
#[test]
fn php_reads_back_what_rust_and_python_wrote_and_the_reverse() {
    let server = support::server();
    let url = server.url();
    let php = Side::php(&url, "conformance-cross");
    read_back_both_ways(&Side::rust(&url), &php);
    read_back_both_ways(&Side::python(&url, "conformance-cross-php"), &php);
}

/// `composer validate --strict` accepts the exported package (composer
/// from Debian's package `composer`, which `.ci/run` installs).
#[test]
fn the_php_package_validates_with_composer() {
    let dir = php_exported("composer");
    let out = Command::new("composer")
        .args(["validate", "--strict", "--no-interaction"])
        .current_dir(&dir)
        .env("COMPOSER_HOME", dir.join(".composer"))
        .output()
        .expect("composer must be installed (apt-get install composer)");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("composer validate --strict: {}", said.trim());
    assert!(out.status.success(), "composer validate --strict: {said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs tests/clients/php_client.php in `mode` against `urls`; its JSON.
fn php_client(dir: &Path, mode: &str, urls: &[String], cluster: bool) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/php_client.php");
    let mut cmd = php();
    cmd.arg(script).arg(dir).arg(mode).args(urls);
    if cluster {
        cmd.arg("--cluster");
    }
    let stdout = support::stdout_of(&mut cmd, &format!("php_client.php {mode}"));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// ShardedHash::len over 2,048 shards is one pipeline per node: every node
/// receives its HLENs in a handful of read events (one per request would be
/// 2,048 in all), and together the nodes answer exactly 2,048 HLENs.
fn fans_out_in_one_round_trip_per_node(nodes: &[&LocalServer], urls: &[String], cluster: bool) {
    let dir = php_exported("fanout");
    let mut got = serde_json::Value::Null;
    let counted = hlens_and_reads(nodes, || got = php_client(&dir, "fanout", urls, cluster));
    assert_eq!(got["len"], 0);
    let mut hlen = 0;
    for (n, (calls, reads)) in nodes.iter().zip(counted) {
        println!(
            "ShardedHash::len over 2048 shards, node {}: {calls} HLEN in {reads} read events",
            n.port()
        );
        assert!(
            calls > 0 && reads <= 16,
            "node {}: {calls} HLEN took {reads} read events: not one pipeline",
            n.port()
        );
        hlen += calls;
    }
    assert_eq!(hlen, 2048);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn php_fans_out_in_one_round_trip_per_node() {
    let server = support::server();
    fans_out_in_one_round_trip_per_node(&[&server], &[server.url()], false);
    let cluster = support::cluster();
    let nodes: Vec<&LocalServer> = cluster.nodes().iter().collect();
    fans_out_in_one_round_trip_per_node(&nodes, &cluster.urls(), true);
}

/// A client with phpredis's OPT_PREFIX: every key the library writes
/// carries it (as phpredis's own commands do), the wake channel too, and a
/// map of numeric-string fields works in setMany.
fn honours_opt_prefix(urls: &[String], cluster: bool, keys: impl Fn() -> Vec<String>) {
    let dir = php_exported("prefix");
    let got = php_client(&dir, "prefix", urls, cluster);
    assert_eq!(got["key"], "redis:lock:{job}", "accessors stay unprefixed");
    assert_eq!(got["fence_positive"], true);
    assert_eq!(got["owned"], true);
    assert_eq!(got["released"], true);
    let woken = got["woken_ms"].as_u64().unwrap();
    assert!(
        woken < 5000,
        "the waiter slept until its timeout: {woken} ms"
    );
    assert_eq!(got["set_many"], 3);
    assert_eq!(
        got["get_many"],
        serde_json::json!(["4", "numeric", "2", null])
    );
    assert_eq!(got["len"], 3);
    assert_eq!(got["visits"], 3);
    assert_eq!(got["reindex_logs"], 1);
    assert_eq!(got["active"], serde_json::json!([7]));
    let keys = keys();
    assert!(!keys.is_empty());
    for k in &keys {
        assert!(k.starts_with("app:"), "{k} does not carry OPT_PREFIX");
    }
    assert!(
        keys.contains(&"app:loginLog_2017-10_client_7".to_string()),
        "{keys:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn php_honours_opt_prefix() {
    let server = support::server();
    honours_opt_prefix(&[server.url()], false, || {
        support::all_keys(&mut server.connection())
    });
    let cluster = support::cluster();
    honours_opt_prefix(&cluster.urls(), true, || {
        let mut all: Vec<String> = cluster
            .nodes()
            .iter()
            .flat_map(|n| support::all_keys(&mut n.connection()))
            .collect();
        all.sort();
        all
    });
}

/// synchronized() keeps a lease alive while the body blocks in one C call
/// (sleep) for 2.5 leases — the renewer is a process of its own, which a
/// signal handler between PHP statements could not be — and in 'calls'
/// mode renews only on keepAlive().
#[test]
fn php_synchronized_renews_while_the_body_blocks() {
    let server = support::server();
    let dir = php_exported("hold");
    let got = php_client(&dir, "hold", &[server.url()], false);
    println!("php synchronized: {got}");
    assert_eq!(got["result"], "done");
    assert_eq!(got["lost"], false);
    let pttl = got["pttl_after_sleep"].as_i64().unwrap();
    assert!(pttl > 0, "the lease ran out while the body slept: {got}");
    assert!(got["body_ms"].as_u64().unwrap() >= 3000);
    assert_eq!(got["held_after"], 0, "released after the body");
    assert!(
        got["calls"].as_i64().unwrap() > 0,
        "keepAlive() renewed: {got}"
    );
    assert_eq!(got["calls_unrenewed"], "LockLost");
    let _ = std::fs::remove_dir_all(&dir);
}
