//! `cargo bench --bench clients`: the same three figures for every client
//! (Rust, Python sync and `redis.asyncio`, PHP, TypeScript), each against
//! its own language's floor measured in the same run (the asyncio column's
//! floors are raw `redis.asyncio` calls). Starts its own redis-server and a 3-node
//! cluster on loopback, exports the three generated clients with the CLI
//! (`redis-patterns export --lang ...`) and drives each language's
//! interpreter with its script in `crates/cli/benches/clients/` (python3 + redis-py,
//! php + phpredis, node + ioredis):
//!
//! * lock handoff (release -> the waiter, blocked in a notified `acquire`,
//!   holds the lock; timed from just before the holder sends its release to
//!   the waiter's acquire returning): p50 / p99 as multiples of that
//!   language's hot PING round trip (the goal p50 <= 3, p99 <= 10,
//!   which the floor itself misses in every language, Rust's too: a handoff
//!   is the release's way to the server, the message's way to the waiter and
//!   the waiter's whole acquire round trip, two round trips of wire, and it
//!   starts after 20 to 29 ms of idling, so the server and the waiter are
//!   woken from sleep, which back-to-back PINGs never are), of one PING after
//!   the same idle pause (20 to 29 ms: what a round trip costs after the
//!   idling a handoff starts from), and
//!   of that language's floor: the same handoff without the client (the
//!   holder's raw `EVALSHA` of the shipped `lock/release`, whose `SPUBLISH`
//!   wakes a waiter blocked on a raw `SSUBSCRIBE` connection, then the
//!   waiter's raw `EVALSHA` of `lock/acquire`, the waiter queued by a
//!   refused attempt before as a client's is; same processes or threads,
//!   same pauses), so that `p50 / floor` is what the client adds to a
//!   handoff: the wake-up itself costs what it costs on the machine;
//! * acquire + release pairs/s (`try_acquire` + `release`) against that
//!   language's raw `SET NX PX` + an `EVALSHA` compare-and-delete
//!   (goal >= 0.9x; the median of 5 interleaved rounds' ratios), and the
//!   client overhead: the same pairs against raw `EVALSHA`s of the two
//!   shipped scripts the client sends (`lock/acquire`, `lock/release`, same
//!   keys and arguments), so that the scripts' cost cancels out and only
//!   what the client does around them (checks, building the call, its
//!   driver, the result object) is left (1.00x: none); and the same in the
//!   interpreter's CPU time per pair (its process clock around each round:
//!   the client's pairs' minus the raw scripts', the client's own CPU per
//!   pair, less sensitive to the machine's load than the rates); and what no
//!   client can remove: the server's own time per pair (`INFO commandstats`
//!   around Rust pairs of each kind: SET + EVALSHA of the raw floor, the two
//!   EVALSHAs of the lock, nested calls included), and with it, per
//!   language, the ratio a client costing nothing would reach: raw pair
//!   time / (raw pair time + the lock scripts' extra server time);
//! * `ShardedHash` length over 2,048 shards: the HLENs each node ran and the
//!   read events it took (`INFO stats` / `commandstats` around the one call)
//!   on a server and on the cluster, next to one raw pipeline of 2,048 HLENs
//!   (goal: one round trip per node).
//!
//! The client's own CPU per pair without a server (its library's send
//! answered from a table, so the machine's syscalls and load drop out):
//! `crates/cli/benches/clients/canned.py DIR [DIR...]` (Python),
//! `canned.js DIR [DIR...]` (TypeScript, ioredis on `NODE_PATH`) and
//! `canned.php DIR` (PHP), on exported clients; several DIRs (a client
//! before and after a change) are measured interleaved in one process.
//!
//! Environment: `BENCH_WAITS` handoffs per language (default 200),
//! `BENCH_CALLS` pairs a round (default 5000); `PYTHONPATH` with redis-py
//! and `REDIS_PATTERNS_NODE_MODULES` (ioredis) as for the tests.

#[path = "../tests/common/mod.rs"]
mod cli;
#[path = "../../../benches/common/mod.rs"]
mod common;
#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{Table, median, num, quantile};
use redis_patterns::lock::Lock;
use redis_patterns::script::ScriptInfo;
use redis_patterns::scripts;
use redis_patterns::sharded_hash::ShardedHash;
use redis_patterns::{Connection, Request};
use redis_patterns_test_support::{LocalCluster, LocalServer};

/// What one language measured (the scripts print it as one JSON line).
struct Figures {
    ping_us: f64,
    idle_ping_us: f64,
    handoffs_us: Vec<f64>,
    ours_pairs_s: Vec<f64>,
    raw_pairs_s: Vec<f64>,
    /// The handoffs without the client (raw SSUBSCRIBE waiter, raw EVALSHAs).
    floor_handoffs_us: Vec<f64>,
    /// Pairs of raw EVALSHAs of the shipped lock/acquire and lock/release.
    script_pairs_s: Vec<f64>,
    /// The process's CPU microseconds per pair of the client's rounds and of
    /// the raw scripts' (empty for Rust: its figures are one process's
    /// threads).
    ours_cpu_us: Vec<f64>,
    script_cpu_us: Vec<f64>,
}

/// A generated client and the command that runs its benchmark script.
struct Client {
    name: &'static str,
    dir: PathBuf,
    program: &'static str,
    script: &'static str,
    env: Vec<(&'static str, String)>,
}

impl Client {
    fn command(&self, mode: &str) -> Command {
        let mut cmd = Command::new(self.program);
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benches/clients")
            .join(self.script);
        cmd.arg(script).arg(&self.dir).arg(mode);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }
}

fn main() {
    let waits = common::env_or("BENCH_WAITS", 200);
    let pairs = common::env_or("BENCH_CALLS", 5000);
    let server = common::server(&[]);
    let cluster = LocalCluster::start().unwrap_or_else(|e| {
        eprintln!("benchmark cannot start a cluster: {e}");
        std::process::exit(2)
    });
    let clients = export_clients();
    println!(
        "redis-server on 127.0.0.1:{}, a 3-node cluster for the fan-out; {waits} handoffs (BENCH_WAITS), {pairs} pairs a round (BENCH_CALLS), per language",
        server.port()
    );
    let mut all = vec![("Rust (redis-patterns)", rust_figures(&server, waits, pairs))];
    for c in &clients {
        all.push((c.name, script_figures(c, &server, waits, pairs)));
    }
    let server_us = server_us_per_pair(&server, pairs);
    handoff_table(&mut all);
    pairs_table(&all, server_us);
    fanout_table(&server, &cluster, &clients);
}

/// Exports the Python, PHP and TypeScript clients with the CLI.
fn export_clients() -> Vec<Client> {
    let root = std::env::temp_dir().join(format!("rp-bench-clients-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let export = |lang: &str| {
        let dir = root.join(lang);
        cli::export(Some(lang), &dir);
        dir
    };
    let node_modules = std::env::var("REDIS_PATTERNS_NODE_MODULES").unwrap_or_else(|_| {
        eprintln!(
            "REDIS_PATTERNS_NODE_MODULES must name node_modules with ioredis (as for the tests)"
        );
        std::process::exit(2)
    });
    vec![
        Client {
            name: "Python (redis-py)",
            dir: export("python"),
            program: "python3",
            script: "bench.py",
            env: vec![],
        },
        Client {
            name: "Python asyncio (redis.asyncio)",
            dir: root.join("python"),
            program: "python3",
            script: "bench.py",
            env: vec![("BENCH_ASYNCIO", "1".into())],
        },
        Client {
            name: "PHP (phpredis)",
            dir: export("php"),
            program: "php",
            script: "bench.php",
            env: vec![],
        },
        Client {
            name: "TypeScript (ioredis)",
            dir: export("typescript"),
            program: "node",
            script: "bench.js",
            env: vec![("NODE_PATH", node_modules)],
        },
    ]
}

/// Runs `client`'s script in figures mode on `server`.
fn script_figures(client: &Client, server: &LocalServer, waits: usize, pairs: usize) -> Figures {
    flush(server);
    let out = support::stdout_of(
        client.command("figures").args([
            server.port().to_string(),
            waits.to_string(),
            pairs.to_string(),
        ]),
        &format!("{} benchmark", client.name),
    );
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{}: not JSON ({e})", client.name));
    let list = |k: &str| -> Vec<f64> {
        v[k].as_array()
            .unwrap_or_else(|| panic!("{}: no {k}", client.name))
            .iter()
            .map(|x| x.as_f64().expect("a number"))
            .collect()
    };
    Figures {
        ping_us: v["ping_us"].as_f64().expect("ping_us"),
        idle_ping_us: v["idle_ping_us"].as_f64().expect("idle_ping_us"),
        handoffs_us: list("handoffs_us"),
        ours_pairs_s: list("ours_pairs_s"),
        raw_pairs_s: list("raw_pairs_s"),
        floor_handoffs_us: list("floor_handoffs_us"),
        script_pairs_s: list("script_pairs_s"),
        ours_cpu_us: list("ours_cpu_us"),
        script_cpu_us: list("script_cpu_us"),
    }
}

fn flush(server: &LocalServer) {
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut server.connection())
        .expect("FLUSHALL");
}

fn us_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// The Rust API's figures, measured as the scripts measure theirs.
fn rust_figures(server: &LocalServer, waits: usize, pairs: usize) -> Figures {
    flush(server);
    let mut con = server.connection();
    let mut pings: Vec<f64> = (0..2000)
        .map(|_| {
            let t = Instant::now();
            let _: String = redis::cmd("PING").query(&mut con).expect("PING");
            us_since(t)
        })
        .collect();
    // after the idling of a handoff: its hold, 20 to 29 ms
    let mut idle: Vec<f64> = (0..waits)
        .map(|i| {
            thread::sleep(Duration::from_millis(20 + (i as u64 * 7) % 10));
            let t = Instant::now();
            let _: String = redis::cmd("PING").query(&mut con).expect("PING");
            us_since(t)
        })
        .collect();
    let handoffs_us = rust_handoffs(&server.url(), waits);
    let floor_handoffs_us = rust_floor_handoffs(server, waits);
    let [ours_pairs_s, raw_pairs_s, script_pairs_s] = rust_pairs(server, &mut con, pairs);
    Figures {
        ping_us: median(&mut pings),
        idle_ping_us: median(&mut idle),
        handoffs_us,
        ours_pairs_s,
        raw_pairs_s,
        floor_handoffs_us,
        script_pairs_s,
        ours_cpu_us: Vec::new(),
        script_cpu_us: Vec::new(),
    }
}

/// `n` handoffs: this thread holds and releases, a waiter thread on its own
/// connection is blocked in `acquire` (notified waiting).
fn rust_handoffs(url: &str, n: usize) -> Vec<f64> {
    let lock = Lock::new("bench-handoff", Duration::from_secs(30)).expect("valid lock");
    let (go, jobs) = mpsc::channel::<()>();
    let (done, got) = mpsc::channel::<Instant>();
    let worker = {
        let (lock, url) = (lock.clone(), url.to_string());
        thread::spawn(move || {
            let mut con = Connection::open(url.as_str()).expect("connect");
            while jobs.recv().is_ok() {
                let lease = lock
                    .acquire(Duration::from_secs(10))
                    .run(&mut con)
                    .expect("acquire");
                let at = Instant::now();
                lock.release(&lease.token).run(&mut con).expect("release");
                done.send(at).expect("report");
            }
        })
    };
    let mut holder = Connection::open(url).expect("connect");
    let mut waits = Vec::with_capacity(n);
    for i in 0..n {
        let held = lock.try_acquire().run(&mut holder).expect("free lock");
        go.send(()).expect("start the waiter");
        thread::sleep(Duration::from_millis(20 + (i as u64 * 7) % 10));
        let released = Instant::now();
        lock.release(&held.token).run(&mut holder).expect("release");
        let at = got.recv().expect("the waiter got it");
        waits.push(at.duration_since(released).as_secs_f64() * 1e6);
    }
    drop(go);
    worker.join().expect("waiter");
    waits
}

/// The shipped lock scripts sent by redis-rs alone (`EVALSHA`), on the
/// keys of the Lock `name`.
struct RawLock {
    acquire_sha: String,
    release_sha: String,
    key: String,
    fence: String,
    queue: String,
    places: String,
    channel: String,
}

impl RawLock {
    fn new(con: &mut redis::Connection, name: &str) -> RawLock {
        let lock = Lock::new(name, Duration::from_secs(30)).expect("valid lock");
        let mut load = |s: &ScriptInfo| -> String {
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(s.source())
                .query(con)
                .expect("SCRIPT LOAD")
        };
        RawLock {
            acquire_sha: load(&scripts::LOCK_ACQUIRE),
            release_sha: load(&scripts::LOCK_RELEASE),
            key: lock.key().to_string(),
            fence: lock.fence_key().to_string(),
            queue: lock.queue_key().to_string(),
            places: lock.places_key().to_string(),
            // the wake channel is `<lock key>:wake` (src/lock)
            channel: format!("{}:wake", lock.key()),
        }
    }

    /// `lock/acquire`: the fence (> 0), or a refusal (<= 0; with a place
    /// the token waits in the queue).
    fn attempt(&self, con: &mut redis::Connection, token: &str, place_ms: u64) -> i64 {
        redis::cmd("EVALSHA")
            .arg(&self.acquire_sha)
            .arg(4)
            .arg(&self.key)
            .arg(&self.fence)
            .arg(&self.queue)
            .arg(&self.places)
            .arg(token)
            .arg(30_000)
            .arg(place_ms)
            .arg(0)
            .query(con)
            .expect("lock/acquire")
    }

    fn acquire(&self, con: &mut redis::Connection, token: &str, place_ms: u64) {
        let fence = self.attempt(con, token, place_ms);
        assert!(fence > 0, "the raw acquire was refused: {fence}");
    }

    fn release(&self, con: &mut redis::Connection, token: &str) {
        let released: i64 = redis::cmd("EVALSHA")
            .arg(&self.release_sha)
            .arg(3)
            .arg(&self.key)
            .arg(&self.queue)
            .arg(&self.places)
            .arg(token)
            .arg(&self.channel)
            .query(con)
            .expect("lock/release");
        assert_eq!(released, 1);
    }
}

/// A waiter's place in the queue: the default, a third of the 30 s lease.
const PLACE_MS: u64 = 10_000;

/// Blocks until the next message of a raw SSUBSCRIBE connection.
fn next_push(sub: &mut redis::Connection) {
    sub.recv_response().expect("a message on the wake channel");
}

/// `n` handoffs without the client: this thread holds and releases with
/// raw EVALSHAs, a waiter thread blocked on a raw SSUBSCRIBE connection
/// takes the lock with a raw EVALSHA when the release's message came.
fn rust_floor_handoffs(server: &LocalServer, n: usize) -> Vec<f64> {
    let mut holder = server.connection();
    let lock = RawLock::new(&mut holder, "bench-floor");
    let (go, jobs) = mpsc::channel::<()>();
    let (done, got) = mpsc::channel::<Instant>();
    let (ready, subscribed) = mpsc::channel::<()>();
    let (placed, queued) = mpsc::channel::<()>();
    let worker = {
        let (mut con, mut sub) = (server.connection(), server.connection());
        let lock = RawLock::new(&mut con, "bench-floor");
        thread::spawn(move || {
            let ssubscribe = redis::cmd("SSUBSCRIBE")
                .arg(&lock.channel)
                .get_packed_command();
            sub.send_packed_command(&ssubscribe).expect("SSUBSCRIBE");
            next_push(&mut sub); // the confirmation
            ready.send(()).expect("report");
            let mut i = 0u64;
            while jobs.recv().is_ok() {
                let token = format!("w{i:031x}");
                // refused: the token waits in the queue (a third of the
                // lease), as a waiter's does
                assert!(lock.attempt(&mut con, &token, PLACE_MS) <= 0);
                placed.send(()).expect("report");
                next_push(&mut sub);
                lock.acquire(&mut con, &token, PLACE_MS);
                let at = Instant::now();
                lock.release(&mut con, &token);
                next_push(&mut sub); // its own release's message
                done.send(at).expect("report");
                i += 1;
            }
        })
    };
    subscribed.recv().expect("the waiter subscribed");
    let mut waits = Vec::with_capacity(n);
    for i in 0..n {
        let token = format!("{i:032x}");
        lock.acquire(&mut holder, &token, 0);
        go.send(()).expect("start the waiter");
        queued.recv().expect("the waiter waits");
        thread::sleep(Duration::from_millis(20 + (i as u64 * 7) % 10));
        let released = Instant::now();
        lock.release(&mut holder, &token);
        let at = got.recv().expect("the waiter got it");
        waits.push(at.duration_since(released).as_secs_f64() * 1e6);
    }
    drop(go);
    worker.join().expect("waiter");
    waits
}

/// `k` pairs of the Lock's: `try_acquire` + `release`.
fn lock_pairs(lock: &Lock, con: &mut Connection, k: usize) {
    for _ in 0..k {
        let lease = lock.try_acquire().run(con).expect("free lock");
        lock.release(&lease.token).run(con).expect("release");
    }
}

/// The raw floor of a pair on `key`: redis-rs's SET NX PX + an EVALSHA
/// compare-and-delete.
struct RawPair {
    cad: String,
    key: &'static str,
}

impl RawPair {
    fn new(con: &mut redis::Connection, key: &'static str) -> RawPair {
        let cad = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0")
            .query(con)
            .expect("SCRIPT LOAD");
        RawPair { cad, key }
    }

    /// `k` pairs.
    fn run(&self, con: &mut redis::Connection, k: usize) {
        for i in 0..k {
            let token = format!("{i:032x}");
            let ok: Option<String> = redis::cmd("SET")
                .arg(self.key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(30_000)
                .query(con)
                .expect("SET NX PX");
            assert!(ok.is_some());
            let v: i64 = redis::cmd("EVALSHA")
                .arg(&self.cad)
                .arg(1)
                .arg(self.key)
                .arg(&token)
                .query(con)
                .expect("compare-and-delete");
            assert_eq!(v, 1);
        }
    }
}

/// One kind of pairs: `k` of them, on the raw connection if it uses one.
type Pairs<'a> = dyn FnMut(usize, &mut redis::Connection) + 'a;

/// 5 rounds of `n` pairs of the Lock's, of redis-rs's raw SET NX PX +
/// EVALSHA compare-and-delete and of raw EVALSHAs of the shipped lock
/// scripts, interleaved (the order turns each round) after a warm-up of
/// each, as the scripts measure theirs: pairs/s of each, in that order.
fn rust_pairs(server: &LocalServer, raw: &mut redis::Connection, n: usize) -> [Vec<f64>; 3] {
    let mut con = Connection::open(server.url()).expect("connect");
    let lock = Lock::new("bench-pairs", Duration::from_secs(30)).expect("valid lock");
    let scripts = RawLock::new(raw, "bench-scripts");
    let raw_pair = RawPair::new(raw, "bench-raw");
    let ours = |k: usize, _: &mut redis::Connection| lock_pairs(&lock, &mut con, k);
    let floor = |k: usize, raw: &mut redis::Connection| raw_pair.run(raw, k);
    let script_pairs = |k: usize, raw: &mut redis::Connection| {
        for i in 0..k {
            let token = format!("{i:032x}");
            scripts.acquire(raw, &token, 0);
            scripts.release(raw, &token);
        }
    };
    let mut kinds: [Box<Pairs<'_>>; 3] = [Box::new(ours), Box::new(floor), Box::new(script_pairs)];
    for f in kinds.iter_mut() {
        f(n / 10, raw);
    }
    let mut got: [Vec<f64>; 3] = Default::default();
    for round in 0..5 {
        for j in 0..3 {
            let which = (round + j) % 3;
            let t = Instant::now();
            kinds[which](n, raw);
            got[which].push(n as f64 / t.elapsed().as_secs_f64());
        }
    }
    got
}

fn handoff_table(all: &mut [(&str, Figures)]) {
    let mut t = Table::new(
        "Lock handoff: release -> the waiter (notified acquire) holds the lock, from just before the release is sent (goal: p50 <= 3x, p99 <= 10x the PING round trip, below the floor in every language: a handoff is two round trips of wire after 20-29 ms idle; idle PING: one PING after the same idle pause; floor: the same handoff with raw commands, no client; what the client adds: p50 / floor p50)",
        &[
            "client",
            "handoffs",
            "PING us",
            "idle PING us",
            "p50 us",
            "p99 us",
            "p50 / PING",
            "p99 / PING",
            "p50 / idle PING",
            "floor p50 us",
            "floor p99 us",
            "p50 / floor p50",
            "p99 / floor p99",
        ],
    );
    for (name, f) in all.iter_mut() {
        let (p50, p99) = (
            quantile(&mut f.handoffs_us, 0.5),
            quantile(&mut f.handoffs_us, 0.99),
        );
        let (floor50, floor99) = (
            quantile(&mut f.floor_handoffs_us, 0.5),
            quantile(&mut f.floor_handoffs_us, 0.99),
        );
        t.row(vec![
            name.to_string(),
            f.handoffs_us.len().to_string(),
            num(f.ping_us),
            num(f.idle_ping_us),
            num(p50),
            num(p99),
            format!("{:.1}x", p50 / f.ping_us),
            format!("{:.1}x", p99 / f.ping_us),
            format!("{:.1}x", p50 / f.idle_ping_us),
            num(floor50),
            num(floor99),
            format!("{:.2}x", p50 / floor50),
            format!("{:.2}x", p99 / floor99),
        ]);
    }
    t.print();
}

/// The median over rounds of `a[i] / b[i]`.
fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    let mut ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    median(&mut ratios)
}

/// The server's time per pair, in microseconds, of the raw floor (SET NX
/// PX + EVALSHA compare-and-delete) and of the Lock's pairs (EVALSHA of
/// lock/acquire and lock/release), from `INFO commandstats` (the
/// top-level commands' usec: a script's includes its nested calls) around
/// `n` Rust pairs of each.
fn server_us_per_pair(server: &LocalServer, n: usize) -> (f64, f64) {
    flush(server);
    let mut raw = server.connection();
    let raw_pair = RawPair::new(&mut raw, "bench-server-raw");
    let mut con = Connection::open(server.url()).expect("connect");
    let lock = Lock::new("bench-server-time", Duration::from_secs(30)).expect("valid lock");
    lock_pairs(&lock, &mut con, 1); // the scripts loaded
    let usec = |raw: &mut redis::Connection, commands: &[&str]| -> f64 {
        commands
            .iter()
            .map(|c| common::command_stats(raw, c).1 as f64)
            .sum()
    };
    common::reset_stats(&mut raw);
    raw_pair.run(&mut raw, n);
    let raw_us = usec(&mut raw, &["set", "evalsha"]) / n as f64;
    common::reset_stats(&mut raw);
    lock_pairs(&lock, &mut con, n);
    let lock_us = usec(&mut raw, &["evalsha", "evalsha_ro", "fcall"]) / n as f64;
    (raw_us, lock_us)
}

fn pairs_table(all: &[(&str, Figures)], (raw_us, lock_us): (f64, f64)) {
    println!(
        "\nServer time per pair (INFO commandstats around Rust pairs of each kind): raw SET NX PX + compare-and-delete {raw_us:.1} us, Lock try_acquire + release (EVALSHA lock/acquire + lock/release) {lock_us:.1} us: {:.1} us more, whatever the client",
        lock_us - raw_us
    );

    let mut t = Table::new(
        "Acquire + release pairs/s, one client, uncontended (goal: >= 0.9x the raw floor; client overhead: ours against raw EVALSHAs of the same two lock scripts, 1.00x = none)",
        &[
            "client",
            "raw SET NX PX + compare-and-delete",
            "raw EVALSHA lock/acquire + lock/release",
            "Lock try_acquire + release",
            "ours / raw (median of 5 rounds)",
            "client overhead: ours / raw scripts (median of 5 rounds)",
            "client CPU per pair: ours - raw scripts (median of 5 rounds)",
            "ours / raw with a client costing nothing: raw / (raw + the scripts' extra server time)",
        ],
    );
    for (name, f) in all {
        let mut cpu: Vec<f64> = f
            .ours_cpu_us
            .iter()
            .zip(&f.script_cpu_us)
            .map(|(o, s)| o - s)
            .collect();
        let cpu = if cpu.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1} us", median(&mut cpu))
        };
        t.row(vec![
            name.to_string(),
            num(median(&mut f.raw_pairs_s.clone())),
            num(median(&mut f.script_pairs_s.clone())),
            num(median(&mut f.ours_pairs_s.clone())),
            format!("{:.2}x", median_ratio(&f.ours_pairs_s, &f.raw_pairs_s)),
            format!("{:.2}x", median_ratio(&f.ours_pairs_s, &f.script_pairs_s)),
            cpu,
            {
                let raw_pair_us = 1e6 / median(&mut f.raw_pairs_s.clone());
                format!(
                    "{:.2}x",
                    raw_pair_us / (raw_pair_us + (lock_us - raw_us).max(0.0))
                )
            },
        ]);
    }
    t.print();
}

/// The script's fan-out: it warms up, says "ready", runs `len` on "go".
fn script_fanout(
    client: &Client,
    urls: &[String],
    cluster: bool,
    nodes: &[&LocalServer],
) -> Vec<(u64, u64)> {
    let mut cmd = client.command("fanout");
    cmd.args(urls);
    if cluster {
        cmd.arg("--cluster");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the script");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("ready");
    assert_eq!(line.trim(), "ready", "{}: {line}", client.name);
    let mut stdin = child.stdin.take().expect("stdin");
    let got = cli::hlens_and_reads(nodes, || {
        stdin.write_all(b"go\n").expect("go");
        stdin.flush().expect("go");
        line.clear();
        out.read_line(&mut line).expect("the length");
    });
    let v: serde_json::Value = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {line}", client.name));
    assert_eq!(v["len"], 0, "{}: {line}", client.name);
    drop(stdin);
    assert!(child.wait().expect("the script ends").success());
    got
}

fn fanout_table(server: &LocalServer, cluster: &LocalCluster, clients: &[Client]) {
    let mut t = Table::new(
        "ShardedHash length over 2,048 shards: HLENs and read events per node (goal: one round trip per node)",
        &[
            "client",
            "topology",
            "HLENs per node",
            "read events per node",
        ],
    );
    let cells = |c: &[(u64, u64)]| {
        let f = |g: &dyn Fn(&(u64, u64)) -> u64| {
            c.iter()
                .map(|x| g(x).to_string())
                .collect::<Vec<_>>()
                .join(" / ")
        };
        (f(&|x| x.0), f(&|x| x.1))
    };
    let cluster_nodes: Vec<&LocalServer> = cluster.nodes().iter().collect();
    let topologies: [(&str, Vec<String>, Vec<&LocalServer>, bool); 2] = [
        ("server", vec![server.url()], vec![server], false),
        ("3-node cluster", cluster.urls(), cluster_nodes, true),
    ];
    let hash = ShardedHash::new("bench-fan", 2048).expect("valid");
    let mut con = server.connection();
    let floor = cli::hlens_and_reads(&[server], || {
        let mut pipe = redis::pipe();
        for i in 0..2048 {
            pipe.cmd("HLEN").arg(format!("bench-fan:{i}"));
        }
        let v: Vec<u64> = pipe.query(&mut con).expect("raw pipeline");
        assert_eq!(v.len(), 2048);
    });
    let (h, r) = cells(&floor);
    t.row(vec![
        "floor: one raw redis-rs pipeline".into(),
        "server".into(),
        h,
        r,
    ]);
    for (topology, urls, nodes, is_cluster) in &topologies {
        let mut con = Connection::open(urls[0].as_str()).expect("connect");
        assert_eq!(hash.len().run(&mut con).expect("len"), 0);
        let got = cli::hlens_and_reads(nodes, || {
            assert_eq!(hash.len().run(&mut con).expect("len"), 0);
        });
        let (h, r) = cells(&got);
        t.row(vec![
            "Rust (redis-patterns)".into(),
            topology.to_string(),
            h,
            r,
        ]);
        for c in clients {
            let (h, r) = cells(&script_fanout(c, urls, *is_cluster, nodes));
            t.row(vec![c.name.into(), topology.to_string(), h, r]);
        }
    }
    t.print();
}
