//! A throwaway `redis-server` on a free loopback port, for the demo, the
//! tests and the benchmarks.
//!
//! It runs with `--save "" --appendonly no` and its log and working directory
//! in a fresh temporary directory, answers `PING` before [`LocalServer::start`]
//! returns, and is killed, reaped and cleaned up on drop. When it is dropped
//! during a panic, the end of its log is printed to stderr.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Why a [`LocalServer`] could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "`{binary}` was not found on PATH: install Redis >= 7.0 (e.g. `apt-get install redis-server`)"
    )]
    NotFound { binary: String },
    #[error("could not start `{binary}`: {source}")]
    Spawn {
        binary: String,
        source: std::io::Error,
    },
    #[error("redis-server on port {port} did not answer within {secs} s; its log:\n{log}")]
    NoAnswer { port: u16, secs: u64, log: String },
    #[error("could not form a cluster: {0}")]
    Cluster(String),
    #[error("i/o error preparing the server directory: {0}")]
    Io(#[from] std::io::Error),
}

/// A running throwaway `redis-server`.
#[derive(Debug)]
pub struct LocalServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl LocalServer {
    /// Starts `redis-server` from PATH (or `$REDIS_SERVER`) with default settings.
    pub fn start() -> Result<Self, StartError> {
        Self::start_with(&[])
    }

    /// Starts one with extra `--name value` arguments, e.g. `["--hash-max-listpack-entries", "128"]`.
    pub fn start_with(extra: &[&str]) -> Result<Self, StartError> {
        Self::start_retrying(|| Ok(extra.iter().map(|a| a.to_string()).collect()))
    }

    /// Starts one with the arguments `extra()` gives for each attempt. A port
    /// found free can be taken by another process before the server binds
    /// it, so a few attempts are made, each with fresh ports.
    fn start_retrying(
        extra: impl Fn() -> std::io::Result<Vec<String>>,
    ) -> Result<Self, StartError> {
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let mut last = None;
        for _ in 0..5 {
            let args = extra()?;
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            match Self::try_start(&binary, &args) {
                Ok(s) => return Ok(s),
                Err(StartError::NoAnswer { port, secs, log }) if log.contains("in use") => {
                    last = Some(StartError::NoAnswer { port, secs, log });
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("at least one attempt"))
    }

    fn try_start(binary: &str, extra: &[&str]) -> Result<Self, StartError> {
        let port = free_port()?;
        let dir = std::env::temp_dir().join(format!(
            "redis-patterns-{}-{}-{}",
            std::process::id(),
            port,
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let child = Command::new(binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| {
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
            })?;
        let mut server = LocalServer { child, port, dir };
        let secs = 10;
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if server.ping() {
                return Ok(server);
            }
            let exited = matches!(server.child.try_wait(), Ok(Some(_)));
            if exited || Instant::now() > deadline {
                let mut log = server.log();
                if let Some(err) = server.child.stderr.as_mut() {
                    let _ = err.read_to_string(&mut log);
                }
                return Err(StartError::NoAnswer { port, secs, log });
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
        redis::cmd("PING").query::<String>(&mut con).is_ok()
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A client for this server.
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("a loopback url is valid")
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
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!(
                "--- redis-server on port {} (last lines of its log) ---",
                self.port
            );
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Three throwaway masters joined into a Redis Cluster on loopback (all
/// 16384 slots covered), stopped on drop.
#[derive(Debug)]
pub struct LocalCluster {
    nodes: Vec<LocalServer>,
}

impl LocalCluster {
    /// Starts three cluster-enabled servers and joins them with
    /// `redis-cli --cluster create` (needs `redis-cli` on PATH or `$REDIS_CLI`).
    pub fn start() -> Result<Self, StartError> {
        let mut nodes = Vec::new();
        for _ in 0..3 {
            // The bus port defaults to port + 10000, which is above 65535
            // for much of the ephemeral range: give it a free port of its own
            // (a fresh one on every attempt).
            nodes.push(LocalServer::start_retrying(|| {
                let bus = free_port()?.to_string();
                Ok([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-port",
                    &bus,
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ]
                .map(String::from)
                .to_vec())
            })?);
        }
        let cli = std::env::var("REDIS_CLI").unwrap_or_else(|_| "redis-cli".into());
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let out = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => StartError::NotFound {
                    binary: cli.clone(),
                },
                _ => StartError::Spawn {
                    binary: cli.clone(),
                    source: e,
                },
            })?;
        if !out.status.success() {
            return Err(StartError::Cluster(
                String::from_utf8_lossy(&out.stdout).into_owned(),
            ));
        }
        let cluster = LocalCluster { nodes };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !cluster.is_ok() {
            if Instant::now() > deadline {
                return Err(StartError::Cluster(
                    "cluster_state did not become ok within 20 s".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(cluster)
    }

    fn is_ok(&self) -> bool {
        self.nodes.iter().all(|n| {
            let Ok(mut con) = n.client().get_connection() else {
                return false;
            };
            redis::cmd("CLUSTER")
                .arg("INFO")
                .query::<String>(&mut con)
                .is_ok_and(|info| info.contains("cluster_state:ok"))
        })
    }

    /// The nodes, each a [`LocalServer`].
    pub fn nodes(&self) -> &[LocalServer] {
        &self.nodes
    }

    /// A cluster client seeded with every node.
    pub fn client(&self) -> redis::cluster::ClusterClient {
        redis::cluster::ClusterClient::new(self.nodes.iter().map(|n| n.url()).collect::<Vec<_>>())
            .expect("loopback urls are valid")
    }
}
