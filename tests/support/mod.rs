//! Test support: a fresh `redis-server` per test, on a free loopback port.
//!
//! [`server`] wraps [`redis_patterns_test_support::LocalServer`]: it panics with a
//! clear message naming the binary when `redis-server` is missing, and the
//! server is killed and reaped on drop (printing the end of its log when the
//! test panicked).
//!
//! The connections of the tests send script calls in the call mode that
//! `REDIS_PATTERNS_CALL_MODE` names: `evalsha` (the default) or `functions`
//! (`FCALL` of the Functions library), so that the whole suite runs in
//! either mode ([`call_mode`]).
#![allow(dead_code)]

use redis_patterns::core::CallMode;
use redis_patterns::{ScriptCall, ScriptInfo};
use redis_patterns_test_support::{LocalCluster, LocalServer};

/// The `lock.acquire` call of the lock `key` (its keys `{key}:fence`,
/// `{key}:queue` and `{key}:places`) by `token` for `lease_ms`: unfair, no
/// place, and `now_us` 0, so that the fencing token counts acquisitions.
pub fn lock_acquire(
    key: &str,
    token: &str,
    lease_ms: i64,
) -> redis_patterns::Result<ScriptCall<i64>> {
    redis_patterns::scripts::lock::acquire(
        key,
        &format!("{key}:fence"),
        &format!("{key}:queue"),
        &format!("{key}:places"),
        token,
        lease_ms,
        0,
        false,
        &[0],
    )
}

/// The `lock.release` call of the lock `key` (its keys as in
/// [`lock_acquire`], and the wake channel `{key}:wake`) by `token`.
pub fn lock_release(key: &str, token: &str) -> redis_patterns::Result<ScriptCall<i64>> {
    redis_patterns::scripts::lock::release(
        key,
        &format!("{key}:queue"),
        &format!("{key}:places"),
        token,
        &format!("{key}:wake"),
    )
}

/// Starts a fresh server with default settings.
pub fn server() -> LocalServer {
    server_with(&[])
}

/// Starts a fresh server with extra `--name value` arguments.
pub fn server_with(extra: &[&str]) -> LocalServer {
    LocalServer::start_with(extra)
        .unwrap_or_else(|e| panic!("cannot start redis-server for this test: {e}"))
}

/// Starts a fresh server that answers `DEBUG` (`--enable-debug-command
/// local`), for checks by [`digest`].
pub fn debug_server() -> LocalServer {
    server_with(&["--enable-debug-command", "local"])
}

/// `DEBUG DIGEST`: a hash of the whole dataset (the server is a
/// [`debug_server`]).
pub fn digest(con: &mut redis::Connection) -> String {
    redis::cmd("DEBUG")
        .arg("DIGEST")
        .query(con)
        .expect("DEBUG DIGEST (the server runs with --enable-debug-command local)")
}

/// Starts a replica of `primary` and waits (at most 30 s) until its link
/// to the primary is up.
pub fn linked_replica(primary: &LocalServer) -> LocalServer {
    let port = primary.port().to_string();
    let replica = server_with(&["--replicaof", "127.0.0.1", &port]);
    let started = std::time::Instant::now();
    while !replica
        .info("replication")
        .contains("master_link_status:up")
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the replica syncs"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    replica
}

/// The scripts of the registry that the server behind `con` runs: those
/// whose capabilities ([`ScriptInfo::needs`]) it has. The tests that run
/// every script iterate these; each one skipped is printed with the
/// capabilities it needs, so the output says what did not run there.
pub fn runnable_scripts(con: &mut redis_patterns::Connection) -> Vec<&'static ScriptInfo> {
    let caps = redis_patterns::Request::run(redis_patterns::core::Caps::read(), con)
        .expect("what the server can do (INFO server, COMMAND INFO)");
    let (run, skip): (Vec<&'static ScriptInfo>, Vec<&'static ScriptInfo>) =
        redis_patterns::scripts::ALL
            .iter()
            .copied()
            .partition(|s| s.runs_on(&caps));
    for s in skip {
        println!(
            "skipped {}: it needs {}, which this server ({} {}) lacks",
            s.name,
            s.needs.join(" and "),
            caps.server.name(),
            caps.version
                .map_or_else(|| "of unknown version".to_string(), |v| v.to_string())
        );
    }
    run
}

/// Every key in the server's database 0, sorted.
pub fn all_keys(con: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS *");
    keys.sort();
    keys
}

/// Runs `command` (name and arguments), which answers `OK`, on `con`:
/// `SCRIPT FLUSH`, `FUNCTION FLUSH`, `CONFIG RESETSTAT`.
pub fn command_ok(con: &mut redis::Connection, command: &[&str]) {
    let _: () = redis::cmd(command[0])
        .arg(&command[1..])
        .query(con)
        .unwrap_or_else(|e| panic!("{}: {e}", command.join(" ")));
}

/// `SCRIPT LOAD` of one shipped script, raw; checks the SHA1 the server
/// answers.
pub fn script_load(con: &mut redis::Connection, s: &ScriptInfo) {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(s.source())
        .query(con)
        .expect("SCRIPT LOAD");
    assert_eq!(sha, s.sha1, "{}", s.name);
}

/// `used_memory` of `server` (`INFO memory`).
pub fn used_memory(server: &LocalServer) -> u64 {
    server
        .info("memory")
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:")?.trim().parse().ok())
        .expect("used_memory")
}

/// `DBSIZE`
pub fn dbsize(con: &mut redis::Connection) -> i64 {
    redis::cmd("DBSIZE").query(con).expect("DBSIZE")
}

/// `DBSIZE` of every node of `cluster`.
pub fn keys_per_node(cluster: &LocalCluster) -> Vec<i64> {
    cluster
        .nodes()
        .iter()
        .map(|n| dbsize(&mut n.connection()))
        .collect()
}

/// [`keys_per_node`] of `cluster`, asserting that the keys live on two of
/// its nodes at least (they spread over the nodes).
pub fn keys_spread(cluster: &LocalCluster) -> Vec<i64> {
    let per_node = keys_per_node(cluster);
    assert!(
        per_node.iter().filter(|&&n| n > 0).count() >= 2,
        "the keys spread over the nodes: {per_node:?}"
    );
    per_node
}

/// A current-thread tokio runtime for the async tests.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The two async connection kinds the wrappers must work on: a multiplexed
/// connection and a `ConnectionManager`.
pub async fn async_connections(
    server: &LocalServer,
) -> (
    redis::aio::MultiplexedConnection,
    redis::aio::ConnectionManager,
) {
    let client = server.client();
    let mux = client
        .get_multiplexed_async_connection()
        .await
        .expect("multiplexed connection");
    let mgr = client
        .get_connection_manager()
        .await
        .expect("connection manager");
    (mux, mgr)
}

/// Forms a fresh three-node Redis Cluster on loopback.
pub fn cluster() -> LocalCluster {
    LocalCluster::start().unwrap_or_else(|e| panic!("cannot start a cluster for this test: {e}"))
}

/// One of the crate's two drivers, so that one test body runs on both.
pub enum Driver {
    Sync(redis_patterns::Connection),
    Async(redis_patterns::AsyncConnection, tokio::runtime::Runtime),
}

impl Driver {
    /// `"sync"` or `"async"`, for messages and key names.
    pub fn name(&self) -> &'static str {
        match self {
            Driver::Sync(_) => "sync",
            Driver::Async(..) => "async",
        }
    }

    /// Runs a request: `run` on the sync connection, `run_async` (blocked
    /// on) on the async one.
    pub fn run<R: redis_patterns::Request>(&mut self, req: R) -> redis_patterns::Result<R::Output> {
        match self {
            Driver::Sync(con) => req.run(con),
            Driver::Async(con, rt) => rt.block_on(req.run_async(con)),
        }
    }

    /// A plain command through the connection's own `query` (on a
    /// cluster, the router's path: the command's key routes it).
    pub fn query<T: redis::FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
    ) -> redis_patterns::Result<T> {
        match self {
            Driver::Sync(con) => con.query(cmd),
            Driver::Async(con, rt) => rt.block_on(con.query(cmd)),
        }
    }

    /// Whether the connection talks to a cluster.
    pub fn is_cluster(&self) -> bool {
        match self {
            Driver::Sync(con) => con.is_cluster(),
            Driver::Async(con, _) => con.is_cluster(),
        }
    }

    /// What the connection's waits met.
    #[allow(dead_code)]
    pub fn wait_stats(&self) -> redis_patterns::core::WaitStats {
        match self {
            Driver::Sync(con) => con.wait_stats(),
            Driver::Async(con, _) => con.wait_stats(),
        }
    }
}

/// The environment variable that selects the tests' call mode.
pub const CALL_MODE_VAR: &str = "REDIS_PATTERNS_CALL_MODE";

/// The call mode of the tests' connections: `$REDIS_PATTERNS_CALL_MODE`
/// (`evalsha` or `functions`), [`CallMode::Evalsha`] when unset.
pub fn call_mode() -> CallMode {
    match std::env::var(CALL_MODE_VAR) {
        Err(_) => CallMode::Evalsha,
        Ok(v) if v.is_empty() => CallMode::Evalsha,
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("{CALL_MODE_VAR}={v:?}: {e}")),
    }
}

/// A sync connection to `url` in the tests' call mode.
pub fn connect(url: &str) -> redis_patterns::Connection {
    redis_patterns::Connection::open(url)
        .expect("sync connection")
        .with_call_mode(call_mode())
}

/// Both drivers, connected to `url` (a server, or any node of a cluster),
/// in the tests' call mode.
pub fn drivers(url: &str) -> Vec<Driver> {
    drivers_in(url, call_mode())
}

/// Both drivers, connected to `url`, sending script calls as `mode` says
/// (for tests of one mode's own behaviour).
pub fn drivers_in(url: &str, mode: CallMode) -> Vec<Driver> {
    let sync = redis_patterns::Connection::open(url)
        .expect("sync connection")
        .with_call_mode(mode);
    let rt = runtime();
    let asy = rt
        .block_on(redis_patterns::AsyncConnection::open(url))
        .expect("async connection")
        .with_call_mode(mode);
    vec![Driver::Sync(sync), Driver::Async(asy, rt)]
}

/// Runs `body` once with each driver against `server`, flushing the
/// server's data (not its script cache or functions) before each run.
pub fn each_driver(server: &LocalServer, body: impl Fn(&mut Driver)) {
    each_driver_in(server, call_mode(), body)
}

/// [`each_driver`] with the drivers in `mode`.
pub fn each_driver_in(server: &LocalServer, mode: CallMode, body: impl Fn(&mut Driver)) {
    for mut d in drivers_in(&server.url(), mode) {
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut server.connection())
            .expect("FLUSHALL");
        body(&mut d);
    }
}

/// Runs `body` once with each driver against `cluster`, flushing every
/// node's data before each run.
pub fn each_cluster_driver(cluster: &LocalCluster, body: impl Fn(&mut Driver)) {
    each_cluster_driver_in(cluster, call_mode(), body)
}

/// [`each_cluster_driver`] with the drivers in `mode`.
pub fn each_cluster_driver_in(cluster: &LocalCluster, mode: CallMode, body: impl Fn(&mut Driver)) {
    for mut d in drivers_in(&cluster.nodes()[0].url(), mode) {
        for node in cluster.nodes() {
            let _: () = redis::cmd("FLUSHALL")
                .query(&mut node.connection())
                .expect("FLUSHALL");
        }
        body(&mut d);
    }
}

impl Driver {
    /// A new driver of the same kind (sync or async, with its own runtime),
    /// connected to `url`: for tests that need several clients at once.
    pub fn another(&self, url: &str) -> Driver {
        let mode = self.call_mode();
        match self {
            Driver::Sync(_) => Driver::Sync(
                redis_patterns::Connection::open(url)
                    .expect("sync connection")
                    .with_call_mode(mode),
            ),
            Driver::Async(..) => {
                let rt = runtime();
                let con = rt
                    .block_on(redis_patterns::AsyncConnection::open(url))
                    .expect("async connection")
                    .with_call_mode(mode);
                Driver::Async(con, rt)
            }
        }
    }

    /// How the driver's connection sends script calls.
    pub fn call_mode(&self) -> CallMode {
        match self {
            Driver::Sync(con) => con.call_mode(),
            Driver::Async(con, _) => con.call_mode(),
        }
    }

    /// A plain command, for test setup and checks.
    pub fn cmd<T: redis::FromRedisValue + Send + 'static>(
        &mut self,
        key: &str,
        cmd: &mut redis::Cmd,
    ) -> T {
        self.run(redis_patterns::Op::<T>::cmd(key, cmd.clone()))
            .unwrap_or_else(|e| panic!("{} on {key}: {e}", self.name()))
    }
}

/// A call of `script` with exactly these keys and arguments, bypassing its
/// typed wrapper's checks (as another language may send it): for tests of
/// the scripts' own checks. Run it like any [`ScriptCall`].
pub fn raw_call<R: redis::FromRedisValue>(
    script: &'static ScriptInfo,
    keys: &[&str],
    args: &[&str],
) -> ScriptCall<R> {
    ScriptCall::raw(script, keys, args)
}

/// A shipped script without the block of generated checks (from its
/// `-- generated checks` line to its `-- end of generated checks` line):
/// the file under `lua/`, byte for byte. `None` when it has no such block.
pub fn without_generated_checks(shipped: &str) -> Option<String> {
    let begin = shipped.find("\n-- generated checks (crates/codegen")? + 1;
    let end_marker = "\n-- end of generated checks\n";
    let end = shipped[begin..].find(end_marker)? + begin + end_marker.len();
    Some(format!("{}{}", &shipped[..begin], &shipped[end..]))
}

/// A shipped script without the block of generated checks and without the
/// functions of its includes (each from its `-- included from
/// lua/includes/...` line to its `-- end of lua/includes/...` line): the
/// file under `lua/`, byte for byte. `None` when it has no checks block.
pub fn without_generated_code(shipped: &str) -> Option<String> {
    let mut out = without_generated_checks(shipped)?;
    while let Some(begin) = out.find("\n-- included from lua/includes/") {
        let begin = begin + 1;
        let end_marker = "\n-- end of lua/includes/";
        let end = out[begin..].find(end_marker)? + begin + end_marker.len();
        let end = out[end..].find('\n')? + end + 1;
        out.replace_range(begin..end, "");
    }
    Some(out)
}

/// Runs `cmd` (another program: php, python3, redis-cli) to its end and
/// returns its stdout; panics with both of its streams unless it exited 0.
/// `what` names it in the messages.
pub fn stdout_of(cmd: &mut std::process::Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {what} ({e}): is it installed?"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A key `{prefix}{N}` (N in braces, the hash tag) whose slot the primary
/// `node` of a cluster serves: the first that `node` answers a `GET` of
/// instead of redirecting.
pub fn key_on(node: &LocalServer, prefix: &str) -> String {
    let mut con = node.connection();
    (0..)
        .map(|i| format!("{prefix}{{{i}}}"))
        .find(|k| {
            redis::cmd("GET")
                .arg(k)
                .query::<Option<String>>(&mut con)
                .is_ok()
        })
        .expect("every primary serves some key")
}

/// The node of `cluster` that owns `key`'s slot (an index into
/// `cluster.nodes()`): the one that answers a command on it without `MOVED`.
pub fn owner(cluster: &LocalCluster, key: &str) -> usize {
    cluster
        .nodes()
        .iter()
        .position(|n| {
            redis::cmd("EXISTS")
                .arg(key)
                .query::<i64>(&mut n.connection())
                .is_ok()
        })
        .expect("some node owns every slot")
}

/// Runs `body` through both drivers on a fresh server, then through both
/// drivers on a fresh three-node cluster.
pub fn on_server_and_cluster(body: impl Fn(&mut Driver)) {
    let server = server();
    each_driver(&server, &body);
    let cluster = cluster();
    each_cluster_driver(&cluster, &body);
}

/// Runs `body` through both drivers on a fresh server (for bodies that
/// need nothing else of the server).
pub fn on_server(body: impl Fn(&mut Driver)) {
    each_driver(&server(), body);
}

/// Runs `body` through both drivers on a fresh server; `body` also gets a
/// plain connection to the server, for setup and checks.
pub fn on_server_with_connection(body: impl Fn(&mut Driver, &mut redis::Connection)) {
    on_server_with_connection_in(call_mode(), body)
}

/// [`on_server_with_connection`] with the drivers in `mode`.
pub fn on_server_with_connection_in(
    mode: CallMode,
    body: impl Fn(&mut Driver, &mut redis::Connection),
) {
    let server = server();
    each_driver_in(&server, mode, |d| body(d, &mut server.connection()));
}

/// [`on_server_with_connection`] on a [`debug_server`], for bodies that
/// check by [`digest`] that nothing changed.
pub fn on_debug_server_with_connection(body: impl Fn(&mut Driver, &mut redis::Connection)) {
    let server = debug_server();
    each_driver(&server, |d| body(d, &mut server.connection()));
}

/// Runs `body` through both drivers on a fresh server; `body` also gets
/// the server's URL (for bodies that open more clients or run the binary).
pub fn on_server_at(body: impl Fn(&mut Driver, &str)) {
    let server = server();
    let url = server.url();
    each_driver(&server, |d| body(d, &url));
}

/// Runs `body` through both drivers on a fresh three-node cluster (for
/// bodies that need nothing else of the cluster).
pub fn on_cluster(body: impl Fn(&mut Driver)) {
    each_cluster_driver(&cluster(), body);
}

/// Runs `body` through both drivers on a fresh three-node cluster; `body`
/// also gets the URL of the node the drivers connect to.
pub fn on_cluster_at(body: impl Fn(&mut Driver, &str)) {
    let cluster = cluster();
    let url = cluster.nodes()[0].url();
    each_cluster_driver(&cluster, |d| body(d, &url));
}

/// [`on_server_and_cluster`] for bodies that open more clients or run the
/// binary: [`on_server_at`], then [`on_cluster_at`].
pub fn on_server_and_cluster_at(body: impl Fn(&mut Driver, &str)) {
    on_server_at(&body);
    on_cluster_at(&body);
}

/// Two tests of `body` (a `fn(&mut Driver, &str)` that gets its driver's
/// URL): `$server` runs it with [`on_server_at`], `$cluster` with
/// [`on_cluster_at`].
#[allow(unused_macros)]
macro_rules! server_and_cluster_tests {
    ($body:ident: $server:ident, $cluster:ident) => {
        #[test]
        fn $server() {
            $crate::support::on_server_at($body);
        }

        #[test]
        fn $cluster() {
            $crate::support::on_cluster_at($body);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use server_and_cluster_tests;
