//! Driving the built `redis-patterns` binary from the tests (and the
//! clients bench): run it, read its status, stdout and stderr, and parse
//! its `--json` output; the interpreters of the exported clients (python3,
//! php); a node's INFO numbers; and the files
//! the tests share (the repository's, and temporary ones).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use redis_patterns_test_support::LocalServer;

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

/// PYTHONPATH with `dir` first (an exported client), then the caller's.
pub fn python_path(dir: &Path) -> String {
    match std::env::var("PYTHONPATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", dir.display()),
        _ => dir.display().to_string(),
    }
}

/// python3 with the client exported in `dir` on its path; panics naming
/// what is missing when `module` (`redis`, `pip`, `mypy`) is not
/// importable.
pub fn python(dir: &Path, module: &str) -> Command {
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

/// php with phpredis (and pcntl, which `spawn` steps and synchronized()
/// use); panics naming what is missing.
pub fn php() -> Command {
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

/// One `INFO` number of a node: a `stats` field, or a command's calls
/// (`commandstats`, `cmdstat_hlen`); 0 when absent.
pub fn info_number(node: &LocalServer, section: &str, field: &str) -> u64 {
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

/// Runs `call` (one fan-out) with the nodes' statistics reset before it;
/// per node, the HLENs it ran and the read events the call took (the INFO
/// that reads the counter before is one read event of its own, subtracted).
pub fn hlens_and_reads(nodes: &[&LocalServer], call: impl FnOnce()) -> Vec<(u64, u64)> {
    for n in nodes {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(&mut n.connection())
            .expect("CONFIG RESETSTAT");
    }
    let before: Vec<u64> = nodes
        .iter()
        .map(|n| info_number(n, "stats", "total_reads_processed"))
        .collect();
    call();
    nodes
        .iter()
        .zip(before)
        .map(|(n, b)| {
            let reads = info_number(n, "stats", "total_reads_processed") - b - 1;
            (info_number(n, "commandstats", "cmdstat_hlen"), reads)
        })
        .collect()
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
