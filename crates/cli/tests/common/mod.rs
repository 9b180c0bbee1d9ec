//! Driving the built `redis-patterns` binary from the tests: run it, read
//! its status, stdout and stderr, and parse its `--json` output; and the
//! files the tests share (the repository's, and temporary ones).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What one run printed.
pub struct Run {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.status == Some(0)
    }

    /// Panics with both streams unless it exited 0.
    pub fn success(self) -> Self {
        assert!(
            self.ok(),
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Panics unless it exited with a failure status.
    pub fn failure(self) -> Self {
        assert!(
            !self.ok() && self.status.is_some(),
            "expected a failure\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// stdout as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.stdout))
    }

    /// stdout as JSON lines.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// Panics unless the one line the binary printed on stderr
    /// ([`Run::message`]) contains `part`.
    pub fn says(&self, part: &str) -> &Self {
        assert!(self.message().contains(part), "{}", self.stderr);
        self
    }

    /// The one line the binary printed on stderr (`redis-patterns: ...`).
    pub fn message(&self) -> &str {
        let lines: Vec<&str> = self.stderr.lines().collect();
        let last = lines.last().copied().unwrap_or("");
        assert!(
            last.starts_with("redis-patterns: "),
            "stderr: {}",
            self.stderr
        );
        &last["redis-patterns: ".len()..]
    }
}

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_redis-patterns"));
    c.env_remove("REDIS_URL");
    c
}

/// Runs `cmd` (the binary from [`bin`], or another program) to its end;
/// what it printed.
pub fn run(cmd: &mut Command) -> Run {
    run_of(cmd.output().expect("run the binary"))
}

fn run_of(out: Output) -> Run {
    Run {
        status: out.status.code(),
        // Every command prints text: stdout must be UTF-8.
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `redis-patterns ARGS --url URL`.
pub fn cli(url: &str, args: &[&str]) -> Run {
    run(bin().args(args).args(["--url", url]))
}

/// Runs `redis-patterns --json ARGS --url URL` and parses its one document.
pub fn json(url: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    cli(url, &all).success().json()
}

/// Runs `redis-patterns --json ARGS --url URL` and parses its JSON lines.
pub fn json_lines(url: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    cli(url, &all).success().json_lines()
}

/// Runs the binary with exactly these arguments (no --url).
pub fn plain(args: &[&str]) -> Run {
    run(bin().args(args))
}

/// A fresh directory for a test's files.
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rp-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// `redis-patterns export [--lang LANG] DIR`, checked to succeed.
pub fn export(lang: Option<&str>, dir: &Path) {
    let mut cmd = bin();
    cmd.arg("export");
    if let Some(lang) = lang {
        cmd.args(["--lang", lang]);
    }
    run(cmd.arg(dir)).success();
}

/// `redis-cli [-c] -h 127.0.0.1 -p PORT ARGS` (`-c`: follow redirects),
/// checked to exit 0; its reply, trimmed.
pub fn redis_cli(port: u16, follow: bool, args: &[&str]) -> String {
    let mut cmd = Command::new(redis_patterns_test_support::cli_binary());
    if follow {
        cmd.arg("-c");
    }
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args);
    crate::support::stdout_of(&mut cmd, "redis-cli")
        .trim()
        .to_string()
}

/// Writes `parts` one after the other to `dir/name`.
pub fn write_file(dir: &Path, name: &str, parts: &[&[u8]]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, parts.concat()).expect("write file");
    path
}

/// Writes `n` lines `{prefix}0`, `{prefix}1`, ... to `dir/name`.
pub fn write_lines(dir: &Path, name: &str, prefix: &str, n: usize) -> PathBuf {
    let path = dir.join(name);
    let text: String = (0..n).map(|i| format!("{prefix}{i}\n")).collect();
    std::fs::write(&path, text).expect("write the lines");
    path
}

/// The root of the workspace (README.md, lua/, tests/data).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README's text between the lines `begin` and `end` (markers such as
/// `<!-- scripts-table -->`), as a generated table must stand there.
pub fn readme_between(begin: &str, end: &str) -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README");
    readme
        .split(begin)
        .nth(1)
        .and_then(|rest| rest.split(end).next())
        .unwrap_or_else(|| panic!("README has the markers {begin:?} and {end:?}"))
        .to_string()
}
