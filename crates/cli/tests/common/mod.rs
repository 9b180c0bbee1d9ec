//! Driving the built `redis-patterns` binary from the tests: run it, read
//! its status, stdout and stderr, and parse its `--json` output.
#![allow(dead_code)]

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

fn run_of(out: Output) -> Run {
    Run {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `redis-patterns ARGS --url URL`.
pub fn cli(url: &str, args: &[&str]) -> Run {
    run_of(
        bin()
            .args(args)
            .args(["--url", url])
            .output()
            .expect("run the binary"),
    )
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
    run_of(bin().args(args).output().expect("run the binary"))
}

/// A fresh directory for a test's files.
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rp-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}
