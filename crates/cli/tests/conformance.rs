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
#[path = "conformance/typescript.rs"]
mod typescript;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{export, repo_root, temp_dir};
use engine::{Cases, Part, Target};
use redis_patterns_test_support::LocalServer;

fn cases_path() -> PathBuf {
    repo_root().join("tests/conformance/cases.json")
}

fn runner() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/conformance.py")
}

/// PYTHONPATH with `dir` first.
fn python_path(dir: &Path) -> String {
    match std::env::var("PYTHONPATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", dir.display()),
        _ => dir.display().to_string(),
    }
}

/// python3 with the exported client on its path; panics naming what is
/// missing when `module` is not importable.
fn python(dir: &Path, module: &str) -> Command {
    let probe = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .env("PYTHONPATH", python_path(dir))
        .output()
        .expect("python3 must be installed");
    assert!(
        probe.status.success(),
        "the Python module `{module}` is missing: python3 -m pip install --target DIR {module}, with DIR on PYTHONPATH (.ci/run does)\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", python_path(dir));
    cmd
}

fn exported(what: &str) -> PathBuf {
    let dir = temp_dir(&format!("py-{what}"));
    export(Some("python"), &dir);
    dir
}

/// Runs the Python runner with `args`; its summary line and failures are
/// printed; panics when a case failed or none ran.
fn run_python(dir: &Path, urls: &[String], flags: &[&str]) -> String {
    let out = python(dir, "redis")
        .arg(runner())
        .arg(cases_path())
        .args(urls)
        .args(flags)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the Python client failed conformance cases:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
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

#[test]
fn python_passes_every_case_on_a_server() {
    let server = support::server();
    let dir = exported("conformance-server");
    let urls = [server.url()];
    expect_all(&run_python(&dir, &urls, &[]), &server.url());
    expect_every_script_ran("python (server)", &urls, false, &[]);
    expect_all(&run_python(&dir, &urls, &["--asyncio"]), &server.url());
    expect_every_script_ran("python asyncio (server)", &urls, false, &[]);
}

#[test]
fn python_passes_every_case_on_a_cluster() {
    let cluster = support::cluster();
    let dir = exported("conformance-cluster");
    let node = &cluster.urls()[0];
    expect_all(&run_python(&dir, &cluster.urls(), &["--cluster"]), node);
    expect_every_script_ran("python (cluster)", &cluster.urls(), true, &[]);
    expect_all(
        &run_python(&dir, &cluster.urls(), &["--cluster", "--asyncio"]),
        node,
    );
    expect_every_script_ran("python asyncio (cluster)", &cluster.urls(), true, &[]);
}

/// Data written by the Rust API is read back by Python, and the reverse:
/// every cross-language case's write part with one, then its read part with
/// the other (no flush between).
#[test]
fn python_and_rust_read_back_what_the_other_wrote() {
    let server = support::server();
    let dir = exported("conformance-cross");
    let target = Target::server(&server.url());
    let cases = Cases::load(&cases_path());
    let cross = cases.cases.iter().filter(|c| engine::is_cross(c)).count();
    let skips = engine::skipped_on(&cases, &target, Part::Read);
    assert!(cross > 0, "no cross-language case");

    let wrote = engine::run_selected(&cases, &target, Part::Write, false);
    wrote.assert_passed();
    let read = run_python(&dir, &[server.url()], &["--part=read"]);
    expect_cases(&read, cross, skips);
    println!("cross rust -> python: {cross} cases");

    run_python(&dir, &[server.url()], &["--part=write"]);
    let read = engine::run_selected(&cases, &target, Part::Read, false);
    println!("cross python -> rust: {}", read.summary());
    read.assert_passed();
    assert_eq!(read.passed + read.skipped, cross);
}

/// `pip install DIR` installs the exported package (scripts, manifest and
/// py.typed included), and `mypy --strict` accepts it.
#[test]
fn the_python_package_installs_and_type_checks() {
    let dir = exported("package");
    let target = temp_dir("py-installed");
    let out = python(&dir, "pip")
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
        .arg(&dir)
        .output()
        .expect("pip runs");
    assert!(
        out.status.success(),
        "pip install of the exported client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
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
    let out = python(&dir, "mypy")
        .args([
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "redis_patterns",
        ])
        .current_dir(&dir)
        .output()
        .expect("mypy runs");
    let report = String::from_utf8_lossy(&out.stdout);
    println!(
        "mypy --strict: {}",
        report.lines().last().unwrap_or_default()
    );
    assert!(
        out.status.success(),
        "mypy --strict refused the client:\n{report}"
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

/// php with phpredis (and pcntl, which `spawn` steps and synchronized()
/// use); panics naming what is missing.
fn php() -> Command {
    let probe = Command::new("php")
        .args([
            "-r",
            "exit(extension_loaded('redis') && function_exists('pcntl_fork') ? 0 : 1);",
        ])
        .output()
        .expect("php-cli must be installed (apt-get install php-cli php-redis)");
    assert!(
        probe.status.success(),
        "PHP needs the extensions redis (apt-get install php-redis) and pcntl (php-cli has it)"
    );
    Command::new("php")
}

fn php_exported(what: &str) -> PathBuf {
    let dir = temp_dir(&format!("php-{what}"));
    export(Some("php"), &dir);
    dir
}

/// Runs the PHP runner on the client in `dir`; prints its summary and
/// failures; panics when a case failed or none ran.
fn run_php(dir: &Path, urls: &[String], flags: &[&str]) -> String {
    let runner = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/conformance.php");
    let out = php()
        .arg(runner)
        .arg(dir)
        .arg(cases_path())
        .args(urls)
        .args(flags)
        .output()
        .expect("php runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the PHP client failed conformance cases:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn php_passes_every_case_on_a_server() {
    let server = support::server();
    let dir = php_exported("conformance-server");
    expect_all(&run_php(&dir, &[server.url()], &[]), &server.url());
    expect_every_script_ran("php (server)", &[server.url()], false, &[]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn php_passes_every_case_on_a_cluster() {
    let cluster = support::cluster();
    let dir = php_exported("conformance-cluster");
    expect_all(
        &run_php(&dir, &cluster.urls(), &["--cluster"]),
        &cluster.urls()[0],
    );
    expect_every_script_ran("php (cluster)", &cluster.urls(), true, &[]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Data written by the Rust API and by Python is read back by PHP, and the
/// reverse: every cross-language case's write part with one client, then
/// its read part with the other (no flush between).
#[test]
fn php_reads_back_what_rust_and_python_wrote_and_the_reverse() {
    let server = support::server();
    let php_dir = php_exported("conformance-cross");
    let py_dir = exported("conformance-cross-php");
    let target = Target::server(&server.url());
    let cases = Cases::load(&cases_path());
    let cross = cases.cases.iter().filter(|c| engine::is_cross(c)).count();
    let skips = engine::skipped_on(&cases, &target, Part::Read);
    let url = [server.url()];
    let read_by_php = |from: &str| {
        let read = run_php(&php_dir, &url, &["--part=read"]);
        expect_cases(&read, cross, skips);
        println!("cross {from} -> php: {cross} cases");
    };

    engine::run_selected(&cases, &target, Part::Write, false).assert_passed();
    read_by_php("rust");
    run_php(&php_dir, &url, &["--part=write"]);
    let read = engine::run_selected(&cases, &target, Part::Read, false);
    println!("cross php -> rust: {}", read.summary());
    read.assert_passed();
    assert_eq!(read.passed + read.skipped, cross);

    run_python(&py_dir, &url, &["--part=write"]);
    read_by_php("python");
    run_php(&php_dir, &url, &["--part=write"]);
    let read = run_python(&py_dir, &url, &["--part=read"]);
    expect_cases(&read, cross, skips);
    println!("cross php -> python: {cross} cases");
    let _ = std::fs::remove_dir_all(&php_dir);
    let _ = std::fs::remove_dir_all(&py_dir);
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
    let out = cmd.output().expect("php runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "php_client.php {mode}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// One `INFO` field of a node, as a number (0 when absent).
fn info_number(node: &LocalServer, section: &str, field: &str) -> u64 {
    node.info(section)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| {
            let v = v.trim();
            let v = v.strip_prefix("calls=").unwrap_or(v);
            v.split(',').next().unwrap_or("0").parse().unwrap_or(0)
        })
        .unwrap_or(0)
}

/// ShardedHash::len over 2,048 shards is one pipeline per node: every node
/// receives its HLENs in a handful of read events (one per request would be
/// 2,048 in all), and together the nodes answer exactly 2,048 HLENs.
fn fans_out_in_one_round_trip_per_node(nodes: &[&LocalServer], urls: &[String], cluster: bool) {
    let dir = php_exported("fanout");
    for n in nodes {
        support::command_ok(&mut n.connection(), &["CONFIG", "RESETSTAT"]);
    }
    let before: Vec<u64> = nodes
        .iter()
        .map(|n| info_number(n, "stats", "total_reads_processed"))
        .collect();
    let got = php_client(&dir, "fanout", urls, cluster);
    assert_eq!(got["len"], 0);
    let mut hlen = 0;
    for (n, b) in nodes.iter().zip(before) {
        // The INFO that read `before` is one read event of its own.
        let reads = info_number(n, "stats", "total_reads_processed") - b - 1;
        let calls = info_number(n, "commandstats", "cmdstat_hlen");
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
