//! The conformance suite (`tests/conformance/cases.json` of the repository)
//! on the generated Python client with the real interpreter: every case on
//! one server and on a 3-node cluster, with redis-py's sync and
//! `redis.asyncio` clients; the cross-language cases written by the Rust API
//! and read by Python, and the reverse; and the package checks: `pip install
//! DIR` installs it, `mypy --strict` accepts it. Needs python3 with redis-py
//! and mypy on PYTHONPATH (`.ci/run` installs them). The TypeScript client's
//! runs (node + ioredis, cross with Rust and Python) are in `typescript`.

mod common;
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

fn expect_all(stdout: &str) {
    let total = Cases::load(&cases_path()).cases.len();
    assert!(
        stdout.contains(&format!(": {total} passed, 0 failed")),
        "not every one of the {total} cases passed:\n{stdout}"
    );
}

#[test]
fn python_passes_every_case_on_a_server() {
    let server = support::server();
    let dir = exported("conformance-server");
    expect_all(&run_python(&dir, &[server.url()], &[]));
    expect_all(&run_python(&dir, &[server.url()], &["--asyncio"]));
}

#[test]
fn python_passes_every_case_on_a_cluster() {
    let cluster = support::cluster();
    let dir = exported("conformance-cluster");
    expect_all(&run_python(&dir, &cluster.urls(), &["--cluster"]));
    expect_all(&run_python(
        &dir,
        &cluster.urls(),
        &["--cluster", "--asyncio"],
    ));
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
    assert!(cross > 0, "no cross-language case");

    let wrote = engine::run_selected(&cases, &target, Part::Write, false);
    wrote.assert_passed();
    let read = run_python(&dir, &[server.url()], &["--part=read"]);
    assert!(
        read.contains(&format!(": {cross} passed, 0 failed")),
        "{read}"
    );
    println!("cross rust -> python: {cross} cases");

    run_python(&dir, &[server.url()], &["--part=write"]);
    let read = engine::run_selected(&cases, &target, Part::Read, false);
    println!("cross python -> rust: {}", read.summary());
    read.assert_passed();
    assert_eq!(read.passed, cross);
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

/// The README's Python example runs as pasted (against a test server).
#[test]
fn the_readme_python_example_runs() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let start = readme
        .find("```python\nimport datetime, redis")
        .expect("the README's Python example");
    let body = &readme[start + "```python\n".len()..];
    let code = &body[..body.find("```").expect("a closed code block")];
    let server = support::server();
    let code = code.replace(
        "redis.Redis()",
        &format!("redis.Redis(port={})", server.port()),
    );
    let dir = exported("readme");
    let out = python(&dir, "redis")
        .args(["-c", &code])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the README's Python example failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
