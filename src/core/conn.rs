//! The sync driver: [`Connection`], one connection type for one server or a
//! Redis Cluster, which runs any [`Op`].
//!
//! The topology belongs to the connection: [`Connection::open`] asks the
//! server once (`INFO cluster`) and, on a cluster node, connects to the
//! cluster instead. Patterns never take a topology.
//!
//! On a cluster, a batch goes out as one pipeline per node, written to every
//! node before any reply is read (one round trip for the whole batch, not
//! one per slot); redis-rs's sync `ClusterConnection` cannot pipeline, so the
//! connection keeps its own connection per primary for that, and uses the
//! `ClusterConnection` (which follows redirects and reconnects) for single
//! commands and for anything redirected.

use std::collections::HashMap;
use std::time::Duration;

use redis::{Cmd, ConnectionAddr, ConnectionInfo, ConnectionLike, IntoConnectionInfo, Value};

use super::batch::{Batch, Exchange, Groups, Part, Target, reply_in_place};
use super::call_mode::CallMode;
use super::op::{Env, Op, Replies, Step};
use super::slots::SlotMap;
use crate::error::{Error, Result};
use crate::script::ScriptInfo;

/// A sync connection to one server or to a Redis Cluster; runs every
/// operation of the crate (`op.run(&mut con)`).
pub struct Connection {
    link: Link,
    env: Env,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("cluster", &self.env.cluster)
            .finish_non_exhaustive()
    }
}

enum Link {
    Single {
        /// Reconnects with it after the connection broke (when known).
        client: Option<Box<redis::Client>>,
        con: Option<Box<redis::Connection>>,
    },
    #[cfg(feature = "cluster")]
    Cluster(Box<ClusterLink>),
}

#[cfg(feature = "cluster")]
struct ClusterLink {
    router: redis::cluster::ClusterConnection,
    /// How to reach a node (credentials, TLS); `None` when the connection
    /// was given to us, and batches then go command by command.
    base: Option<ConnectionInfo>,
    nodes: HashMap<(String, u16), redis::Connection>,
    slots: SlotMap,
}

/// Whether `INFO` (of `INFO cluster`) says `cluster_enabled:1`; on a cluster
/// connection redis-rs answers with a map of node to text.
pub(crate) fn cluster_enabled(reply: &Value) -> bool {
    let says = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b)
            .lines()
            .any(|l| l.trim() == "cluster_enabled:1"),
        Value::VerbatimString { text, .. } => text.lines().any(|l| l.trim() == "cluster_enabled:1"),
        Value::SimpleString(s) => s.lines().any(|l| l.trim() == "cluster_enabled:1"),
        _ => false,
    };
    match reply {
        Value::Map(nodes) => nodes.iter().any(|(_, v)| says(v)),
        v => says(v),
    }
}

pub(crate) fn info_cluster() -> Cmd {
    let mut cmd = redis::cmd("INFO");
    cmd.arg("cluster");
    cmd
}

/// `base` with another host and port (same credentials and TLS settings).
pub(crate) fn node_info(base: &ConnectionInfo, host: &str, port: u16) -> ConnectionInfo {
    let addr = match base.addr() {
        ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => ConnectionAddr::TcpTls {
            host: host.to_string(),
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => ConnectionAddr::Tcp(host.to_string(), port),
    };
    base.clone().set_addr(addr)
}

/// A cluster client with the crate's timeouts (connect 5 s, reply 30 s).
#[cfg(feature = "cluster")]
pub(crate) fn cluster_client<T: IntoConnectionInfo>(
    nodes: impl IntoIterator<Item = T>,
) -> Result<redis::cluster::ClusterClient> {
    Ok(redis::cluster::ClusterClient::builder(nodes)
        .connection_timeout(Duration::from_secs(5))
        .response_timeout(Duration::from_secs(30))
        .build()?)
}

impl Connection {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/`). When the server
    /// is a Redis Cluster node, connects to the cluster it belongs to.
    pub fn open(url: impl IntoConnectionInfo) -> Result<Self> {
        let info = url.into_connection_info()?;
        let client = redis::Client::open(info.clone())?;
        let mut con = client.get_connection()?;
        let reply: Value = info_cluster().query(&mut con)?;
        if cluster_enabled(&reply) {
            #[cfg(feature = "cluster")]
            return Self::cluster([info]);
            #[cfg(not(feature = "cluster"))]
            return Err(Error::invalid(
                "url",
                "names a Redis Cluster node: enable the crate's `cluster` feature",
            ));
        }
        Ok(Self {
            link: Link::Single {
                client: Some(Box::new(client)),
                con: Some(Box::new(con)),
            },
            env: Env {
                cluster: false,
                ..Env::default()
            },
        })
    }

    /// Connects to the Redis Cluster that these nodes (any of them) belong to.
    #[cfg(feature = "cluster")]
    pub fn cluster<T: IntoConnectionInfo>(nodes: impl IntoIterator<Item = T>) -> Result<Self> {
        let infos = nodes
            .into_iter()
            .map(|n| n.into_connection_info())
            .collect::<redis::RedisResult<Vec<_>>>()?;
        let base = infos
            .first()
            .cloned()
            .ok_or_else(|| Error::invalid("nodes", "must name at least one node"))?;
        let router = cluster_client(infos)?.get_connection()?;
        Ok(Self::from_cluster_parts(router, Some(base)))
    }

    #[cfg(feature = "cluster")]
    fn from_cluster_parts(
        router: redis::cluster::ClusterConnection,
        base: Option<ConnectionInfo>,
    ) -> Self {
        Self {
            link: Link::Cluster(Box::new(ClusterLink {
                router,
                base,
                nodes: HashMap::new(),
                slots: SlotMap::default(),
            })),
            env: Env {
                cluster: true,
                ..Env::default()
            },
        }
    }

    /// Wraps a connection to one server. A connection to a Redis Cluster
    /// node is refused: it could not follow keys to other nodes (open the
    /// node's URL with [`Connection::open`] instead).
    pub fn from_redis(mut con: redis::Connection) -> Result<Self> {
        let reply: Value = info_cluster().query(&mut con)?;
        if cluster_enabled(&reply) {
            return Err(Error::invalid(
                "connection",
                "talks to a Redis Cluster node and cannot follow keys to other nodes: open its url with Connection::open",
            ));
        }
        Ok(Self {
            link: Link::Single {
                client: None,
                con: Some(Box::new(con)),
            },
            env: Env {
                cluster: false,
                ..Env::default()
            },
        })
    }

    /// Wraps redis-rs's sync cluster connection. Without the nodes' URLs it
    /// cannot open connections of its own, so batches go command by command;
    /// [`Connection::cluster`] sends one pipeline per node instead.
    #[cfg(feature = "cluster")]
    pub fn from_cluster(con: redis::cluster::ClusterConnection) -> Self {
        Self::from_cluster_parts(con, None)
    }

    /// Whether this connection talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.env.cluster
    }

    /// How this connection sends script calls (default
    /// [`CallMode::Evalsha`]).
    pub fn call_mode(&self) -> CallMode {
        self.env.call_mode
    }

    /// Sends script calls as `mode` says from now on:
    /// [`CallMode::Functions`] sends `FCALL` / `FCALL_RO` of the
    /// [library](crate::functions) and loads it where it is missing.
    pub fn set_call_mode(&mut self, mode: CallMode) {
        self.env.call_mode = mode;
    }

    /// The connection with its call mode set (see
    /// [`Connection::set_call_mode`]).
    pub fn with_call_mode(mut self, mode: CallMode) -> Self {
        self.set_call_mode(mode);
        self
    }

    /// Runs one plain command (routed by its key on a cluster) — for what
    /// the patterns do not cover. Error replies are returned as errors.
    pub fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        let reply = self.send_routed(cmd, None)?;
        super::op::decode(None, reply)
    }

    /// The sync driver: runs `op` to completion.
    pub(crate) fn execute<T: Send + 'static>(&mut self, mut op: Op<T>) -> Result<T> {
        let env = self.env;
        let mut replies = None;
        loop {
            match op.step(&env, replies.take())? {
                Step::Done(v) => return Ok(v),
                Step::Sleep(d) => {
                    std::thread::sleep(d);
                    replies = Some(Replies::default());
                }
                Step::Send(batch) => replies = Some(self.exchange(batch)?),
            }
        }
    }

    fn exchange(&mut self, mut batch: Batch) -> Result<Replies> {
        if let Some(e) = batch.take_refused() {
            return Err(e);
        }
        if batch.is_empty() {
            return Ok(Replies::default());
        }
        let (groups, routed) = self.partition(&batch)?;
        let mut ex = Exchange::new(batch, groups, self.env.cluster).call_mode(self.env.call_mode);
        ex.route_keyless(routed);
        loop {
            let parts = ex.round()?;
            if parts.is_empty() {
                break;
            }
            let replies = self.send_parts(&parts)?;
            for (part, replies) in parts.iter().zip(replies) {
                ex.settle(part.group, replies)?;
            }
        }
        let routed = ex.take_routed();
        if !routed.is_empty() {
            self.forget_slots();
        }
        for i in routed {
            let (cmd, script) = ex.entry(i);
            let reply = match ex.slot_node(i) {
                Some(slot) => self.send_to_slot_node(&cmd.clone(), slot)?,
                None => self.send_routed(&cmd.clone(), script)?,
            };
            ex.file(i, reply);
        }
        ex.finish()
    }

    /// Splits a batch into groups by target, and the commands to route one
    /// by one.
    fn partition(&mut self, batch: &Batch) -> Result<(Groups, Vec<usize>)> {
        match &mut self.link {
            Link::Single { .. } => Ok((vec![(Target::Server, (0..batch.len()).collect())], vec![])),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => {
                if batch.len() == 1 || c.base.is_none() {
                    return Ok((Vec::new(), (0..batch.len()).collect()));
                }
                if c.slots.is_empty() {
                    let reply = c.router.route_command(
                        &SlotMap::cmd(),
                        redis::cluster_routing::RoutingInfo::SingleNode(
                            redis::cluster_routing::SingleNodeRoutingInfo::Random,
                        ),
                    )?;
                    c.slots = SlotMap::parse(reply)?;
                }
                Ok(c.slots.partition(&batch.slots()))
            }
        }
    }

    /// The slot map may be stale (a redirect was seen): read it again next time.
    fn forget_slots(&mut self) {
        #[cfg(feature = "cluster")]
        if let Link::Cluster(c) = &mut self.link {
            c.slots = SlotMap::default();
        }
    }

    /// Sends one round: every part's pipeline is written before any reply is
    /// read, so the nodes work concurrently.
    fn send_parts(&mut self, parts: &[Part]) -> Result<Vec<Vec<Value>>> {
        match &mut self.link {
            Link::Single { client, con } => {
                let part = &parts[0];
                let c = single(client, con)?;
                let replies: redis::RedisResult<Vec<Value>> = part.pipe.query(c);
                Ok(vec![replies.map_err(|e| broken(con, e))?])
            }
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.send_parts(parts),
        }
    }

    /// Sends one command on its own (routed, following redirects, on a
    /// cluster); a script missing from the cache is loaded and the call sent
    /// once more. Error replies come back as `Value::ServerError`.
    fn send_routed(&mut self, cmd: &Cmd, script: Option<&'static ScriptInfo>) -> Result<Value> {
        let reply = self.send_one(cmd)?;
        match (&reply, script) {
            (reply, Some(s)) if self.env.call_mode.not_loaded(reply) => {
                let mode = self.env.call_mode;
                let loaded = self.send_one(&mode.load_cmd(s))?;
                mode.check_loaded(s, loaded)?;
                self.send_one(cmd)
            }
            _ => Ok(reply),
        }
    }

    /// Sends a keyless command to the primary that serves `slot` (the one
    /// server when there is no cluster).
    fn send_to_slot_node(&mut self, cmd: &Cmd, slot: u16) -> Result<Value> {
        match &mut self.link {
            Link::Single { .. } => self.send_one(cmd),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => {
                use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                let to = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
                reply_in_place(c.router.route_command(cmd, RoutingInfo::SingleNode(to)))
            }
        }
    }

    fn send_one(&mut self, cmd: &Cmd) -> Result<Value> {
        match &mut self.link {
            Link::Single { client, con } => {
                let c = single(client, con)?;
                let reply = c.req_command(cmd);
                reply_in_place(reply.map_err(|e| broken(con, e)))
            }
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => reply_in_place(c.router.req_command(cmd)),
        }
    }
}

/// The single-server connection, reconnecting first when it broke earlier.
fn single<'a>(
    client: &Option<Box<redis::Client>>,
    con: &'a mut Option<Box<redis::Connection>>,
) -> Result<&'a mut redis::Connection> {
    if con.is_none() {
        let Some(client) = client else {
            return Err(Error::from(redis::RedisError::from((
                redis::ErrorKind::Io,
                "connection lost",
                "it was handed to redis-patterns without its client, so it cannot reconnect"
                    .to_string(),
            ))));
        };
        *con = Some(Box::new(
            client.get_connection_with_timeout(Duration::from_secs(5))?,
        ));
    }
    Ok(con.as_mut().expect("set above"))
}

/// Drops a connection that an I/O error broke, so the next call reconnects.
fn broken(con: &mut Option<Box<redis::Connection>>, e: redis::RedisError) -> redis::RedisError {
    if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() {
        *con = None;
    }
    e
}

#[cfg(feature = "cluster")]
impl ClusterLink {
    fn node(&mut self, node: usize) -> Result<&mut redis::Connection> {
        let addr = self.slots.addr(node).clone();
        if !self.nodes.contains_key(&addr) {
            let base = self
                .base
                .as_ref()
                .expect("batches are split only with a base");
            let info = node_info(base, &addr.0, addr.1);
            let con =
                redis::Client::open(info)?.get_connection_with_timeout(Duration::from_secs(5))?;
            self.nodes.insert(addr.clone(), con);
        }
        Ok(self.nodes.get_mut(&addr).expect("inserted above"))
    }

    fn send_parts(&mut self, parts: &[Part]) -> Result<Vec<Vec<Value>>> {
        let nodes: Vec<usize> = parts
            .iter()
            .map(|p| match p.target {
                Target::Node { node, .. } => node,
                Target::Server => unreachable!("cluster batches are split by node"),
            })
            .collect();
        let mut written = Vec::with_capacity(parts.len());
        for (part, &node) in parts.iter().zip(&nodes) {
            let con = self.node(node)?;
            if let Err(e) = con.send_packed_command(&part.pipe.get_packed_pipeline()) {
                self.drop_node(node);
                return Err(e.into());
            }
            written.push(node);
        }
        let mut out = Vec::with_capacity(parts.len());
        for (part, &node) in parts.iter().zip(&written) {
            let con = self.node(node)?;
            let mut replies = Vec::with_capacity(part.len());
            for _ in 0..part.len() {
                match reply_in_place(con.recv_response()) {
                    Ok(v) => replies.push(v),
                    Err(e) => {
                        self.drop_node(node);
                        return Err(e);
                    }
                }
            }
            out.push(replies);
        }
        Ok(out)
    }

    /// After an I/O error some node connections may hold unread replies:
    /// drop them all (they reconnect on the next batch) and re-read the map.
    fn drop_node(&mut self, _node: usize) {
        self.nodes.clear();
        self.slots = SlotMap::default();
    }
}
