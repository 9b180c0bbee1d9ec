//! The sync driver: [`Connection`], one connection type for one server or a
//! Redis Cluster, which runs any [`Op`].
//!
//! The topology belongs to the connection: [`Connection::open`] asks the
//! server once (`INFO cluster`) and, on a cluster node, connects to the
//! cluster instead. Patterns never take a topology.
//!
//! On a cluster, a batch goes out as one pipeline per node, written to every
//! node before any reply is read (one round trip for the whole batch, not
//! one per slot), on connections of its own to each node, routed by its own
//! slot map (`CLUSTER SLOTS`, read anew after a redirect or a lost node);
//! commands without a key go through redis-rs's `ClusterConnection`.
//!
//! The driver only does the I/O: what to send again, when, and what fails
//! is decided once for both drivers by the exchange ([`Batch`] and
//! [`RetryPolicy`]). A connection that broke is dropped and opened again on
//! its next use.
//!
//! A [`Step::Wait`] subscribes (`SSUBSCRIBE`) on a subscription connection
//! of its own to the node that serves the channel's slot (see
//! [`subscriber`](super::subscriber)).

use std::collections::HashMap;
use std::time::Duration;

use redis::{Cmd, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, Value};

use super::batch::{
    Addr, Batch, Exchange, Next, Outcome, Part, Refresh, Target, failed, not_sent, reply_in_place,
};
use super::call_mode::CallMode;
use super::durability::Durability;
use super::op::{Env, Op, Replies, Step, wait_replies};
use super::retry::RetryPolicy;
#[cfg(feature = "cluster")]
use super::slots::SlotMap;
use super::subscriber::Subscriber;
use crate::error::{Error, Result};
use crate::keys::cluster_slot;

/// How long connecting may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one reply may take (redis-rs's async default is 500 ms, which a
/// large batch or a busy machine exceeds).
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// A sync connection to one server or to a Redis Cluster; runs every
/// operation of the crate (`op.run(&mut con)`), retrying by its
/// [`RetryPolicy`] and waiting for replicas by its [`Durability`].
pub struct Connection {
    link: Link,
    env: Env,
    policy: RetryPolicy,
    durability: Durability,
    /// The subscription connections of [`Step::Wait`].
    subscriber: Subscriber,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("cluster", &self.env.cluster)
            .field("policy", &self.policy)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

enum Link {
    Single(Single),
    #[cfg(feature = "cluster")]
    Cluster(Box<ClusterLink>),
}

struct Single {
    /// Reconnects with it after the connection broke (when known).
    client: Option<Box<redis::Client>>,
    con: Option<Box<redis::Connection>>,
}

#[cfg(feature = "cluster")]
struct ClusterLink {
    /// The cluster client for commands without a key; `None` until it is
    /// built again (after it failed).
    router: Option<redis::cluster::ClusterConnection>,
    /// Where the router is built from; empty when it was handed to us (it
    /// is then never rebuilt).
    seeds: Vec<ConnectionInfo>,
    /// How to reach a node (credentials, TLS); `None` when the router was
    /// handed to us, and every command then goes through it.
    base: Option<ConnectionInfo>,
    nodes: HashMap<Addr, redis::Connection>,
    slots: SlotMap,
    /// Every node seen (seeds and the slot maps' nodes), asked in turn for
    /// the slot map; `next` is the one asked first next time.
    known: Vec<Addr>,
    next: usize,
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

/// The address of a TCP connection info (`None` for a unix socket).
pub(crate) fn addr_of(info: &ConnectionInfo) -> Option<Addr> {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            Some((host.clone(), *port))
        }
        _ => None,
    }
}

/// A cluster client with the crate's timeouts (connect 5 s, reply 30 s)
/// that never retries by itself (the exchange decides), seeded with `nodes`.
#[cfg(feature = "cluster")]
pub(crate) fn cluster_client<T: IntoConnectionInfo>(
    nodes: impl IntoIterator<Item = T>,
) -> Result<redis::cluster::ClusterClient> {
    Ok(redis::cluster::ClusterClient::builder(nodes)
        .connection_timeout(CONNECT_TIMEOUT)
        .response_timeout(RESPONSE_TIMEOUT)
        .retries(0)
        .build()?)
}

/// Routing to the primary that serves `slot` (a keyless command for one
/// node sent through the router).
#[cfg(feature = "cluster")]
pub(crate) fn to_slot_node(slot: u16) -> redis::cluster_routing::RoutingInfo {
    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
        slot,
        SlotAddr::Master,
    )))
}

/// The seeds of a cluster client: the given nodes, then every node known
/// since (same credentials as the first).
#[cfg(feature = "cluster")]
pub(crate) fn seeds_and_known(seeds: &[ConnectionInfo], known: &[Addr]) -> Vec<ConnectionInfo> {
    let mut out = seeds.to_vec();
    if let Some(base) = seeds.first() {
        for (host, port) in known {
            let info = node_info(base, host, *port);
            if !out.iter().any(|s| s.addr() == info.addr()) {
                out.push(info);
            }
        }
    }
    out
}

impl Connection {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/`). When the server
    /// is a Redis Cluster node, connects to the cluster it belongs to.
    pub fn open(url: impl IntoConnectionInfo) -> Result<Self> {
        let info = url.into_connection_info()?;
        let client = redis::Client::open(info.clone())?;
        let mut con = connect(&client)?;
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
        Ok(Self::with_link(
            Link::Single(Single {
                client: Some(Box::new(client)),
                con: Some(Box::new(con)),
            }),
            false,
        ))
    }

    /// Connects to the Redis Cluster that these nodes (any of them) belong to.
    #[cfg(feature = "cluster")]
    pub fn cluster<T: IntoConnectionInfo>(nodes: impl IntoIterator<Item = T>) -> Result<Self> {
        let seeds = nodes
            .into_iter()
            .map(|n| n.into_connection_info())
            .collect::<redis::RedisResult<Vec<_>>>()?;
        let base = seeds
            .first()
            .cloned()
            .ok_or_else(|| Error::invalid("nodes", "must name at least one node"))?;
        let router = cluster_client(seeds.clone())?.get_connection()?;
        let known = seeds.iter().filter_map(addr_of).collect();
        Ok(Self::with_link(
            Link::Cluster(Box::new(ClusterLink {
                router: Some(router),
                seeds,
                base: Some(base),
                nodes: HashMap::new(),
                slots: SlotMap::default(),
                known,
                next: 0,
            })),
            true,
        ))
    }

    fn with_link(link: Link, cluster: bool) -> Self {
        Self {
            link,
            env: Env {
                cluster,
                ..Env::default()
            },
            policy: RetryPolicy::default(),
            durability: Durability::default(),
            subscriber: Subscriber::default(),
        }
    }

    /// Wraps a connection to one server. A connection to a Redis Cluster
    /// node is refused: it could not follow keys to other nodes (open the
    /// node's URL with [`Connection::open`] instead). Without its client it
    /// cannot reconnect after the server restarts: a call fails once it
    /// broke (prefer [`Connection::open`]).
    pub fn from_redis(mut con: redis::Connection) -> Result<Self> {
        let reply: Value = info_cluster().query(&mut con)?;
        if cluster_enabled(&reply) {
            return Err(Error::invalid(
                "connection",
                "talks to a Redis Cluster node and cannot follow keys to other nodes: open its url with Connection::open",
            ));
        }
        Ok(Self::with_link(
            Link::Single(Single {
                client: None,
                con: Some(Box::new(con)),
            }),
            false,
        ))
    }

    /// Wraps redis-rs's sync cluster connection. Without the nodes' URLs it
    /// cannot open connections of its own, so batches go command by command
    /// through it, it is never rebuilt, and it retries and follows
    /// redirects by its own settings (redis-rs's default resends a request
    /// after a lost connection: build its client with `.retries(0)` to leave
    /// that to this crate). [`Connection::cluster`] does better.
    #[cfg(feature = "cluster")]
    pub fn from_cluster(con: redis::cluster::ClusterConnection) -> Self {
        Self::with_link(
            Link::Cluster(Box::new(ClusterLink {
                router: Some(con),
                seeds: Vec::new(),
                base: None,
                nodes: HashMap::new(),
                slots: SlotMap::default(),
                known: Vec::new(),
                next: 0,
            })),
            true,
        )
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

    /// How this connection retries (see [`RetryPolicy`]).
    pub fn retry_policy(&self) -> RetryPolicy {
        self.policy
    }

    /// Sets how this connection retries.
    pub fn set_retry_policy(&mut self, policy: RetryPolicy) {
        self.policy = policy;
    }

    /// How many replicas must acknowledge writes (see [`Durability`]).
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Sets how many replicas must acknowledge writes. Refused on a wrapped
    /// redis-rs cluster connection ([`Connection::from_cluster`]): it sends
    /// commands one by one, so no `WAIT` could follow them on their node's
    /// connection.
    pub fn set_durability(&mut self, durability: Durability) -> Result<()> {
        #[cfg(feature = "cluster")]
        if let (Link::Cluster(c), Durability::Replicas { .. }) = (&self.link, durability)
            && c.base.is_none()
        {
            return Err(Error::invalid(
                "durability",
                "needs a connection that sends each node's commands itself (Connection::cluster or Connection::open), not a wrapped ClusterConnection",
            ));
        }
        self.durability = durability;
        Ok(())
    }

    /// Runs one plain command (routed by its key on a cluster) — for what
    /// the patterns do not cover. Error replies are returned as errors. It
    /// is retried like a batch's command: a command that is not safe to
    /// send twice (`INCR` …) fails with
    /// [`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown) when
    /// the connection is lost after it was sent.
    pub fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        let mut batch = Batch::new();
        batch.add_keyless(cmd.clone());
        self.exchange(batch)?.take()
    }

    /// Opens another connection to the same server or cluster, with the
    /// same settings: for a thread of its own (a lock guard's renewal
    /// thread uses one). Refused for a connection wrapped with
    /// [`Connection::from_redis`] or [`Connection::from_cluster`], which
    /// cannot open connections.
    pub fn try_clone(&self) -> Result<Connection> {
        let link = match &self.link {
            Link::Single(Single {
                client: Some(client),
                ..
            }) => Link::Single(Single {
                con: Some(Box::new(connect(client)?)),
                client: Some(client.clone()),
            }),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) if !c.seeds.is_empty() => {
                let Self { link, .. } = Self::cluster(c.seeds.clone())?;
                link
            }
            _ => {
                return Err(Error::invalid(
                    "connection",
                    "was wrapped without its client and cannot open another: open it with Connection::open",
                ));
            }
        };
        let mut con = Self::with_link(link, self.env.cluster);
        con.env = self.env;
        con.policy = self.policy;
        con.durability = self.durability;
        Ok(con)
    }

    /// The sync driver: runs `op` to completion; then drops the
    /// subscriptions its waits made.
    pub(crate) fn execute<T: Send + 'static>(&mut self, op: Op<T>) -> Result<T> {
        let result = self.drive(op);
        self.subscriber.finish();
        result
    }

    fn drive<T: Send + 'static>(&mut self, mut op: Op<T>) -> Result<T> {
        let env = self.env;
        let mut replies = None;
        loop {
            match op.step(&env, replies.take())? {
                Step::Done(v) => return Ok(v),
                Step::Sleep(d) => {
                    std::thread::sleep(d);
                    replies = Some(Replies::default());
                }
                Step::Wait { channel, timeout } => {
                    replies = Some(wait_replies(self.wait(&channel, timeout)));
                }
                Step::Send(batch) => replies = Some(self.exchange(batch)?),
            }
        }
    }

    /// One [`Step::Wait`]: on the subscription connection to the node that
    /// serves the channel's slot; a plain sleep when the connection cannot
    /// open one (wrapped without its client).
    fn wait(&mut self, channel: &[u8], timeout: Duration) -> bool {
        let Some((node, info)) = self.wait_target(cluster_slot(channel)) else {
            std::thread::sleep(timeout);
            return false;
        };
        let mut stale = false;
        let woken = self
            .subscriber
            .wait(node, &info, channel, timeout, &mut || stale = true);
        if stale {
            #[cfg(feature = "cluster")]
            if let Link::Cluster(c) = &mut self.link {
                c.slots = SlotMap::default();
            }
        }
        woken
    }

    /// The node that serves `slot` and how to connect to it.
    fn wait_target(&mut self, slot: u16) -> Option<(Addr, ConnectionInfo)> {
        match &mut self.link {
            Link::Single(s) => {
                let info = s.client.as_ref()?.get_connection_info().clone();
                Some((node_key(&info), info))
            }
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => {
                let base = c.base.clone()?;
                if c.slots.is_empty() {
                    c.read_slots().ok()?;
                }
                let (host, port) = c.slots.primary_of(slot)?.clone();
                let info = node_info(&base, &host, port);
                Some(((host, port), info))
            }
        }
    }

    /// One batch: the exchange decides, this sends.
    fn exchange(&mut self, mut batch: Batch) -> Result<Replies> {
        if let Some(e) = batch.take_refused() {
            return Err(e);
        }
        if batch.is_empty() {
            return Ok(Replies::default());
        }
        let mut ex = Exchange::new(
            batch,
            self.env.cluster,
            self.policy,
            self.durability,
            self.env.call_mode,
        );
        loop {
            match ex.next() {
                Next::Done => return ex.finish(),
                Next::Sleep(d) => std::thread::sleep(d),
                Next::Send(refresh) => {
                    let targets = match self.targets(refresh, &ex.pending_slots()) {
                        Ok(t) => t,
                        Err(e) => {
                            ex.unreachable(e)?;
                            continue;
                        }
                    };
                    let parts = ex.round(targets);
                    let outcomes = self.send_parts(&parts);
                    ex.settle(parts, outcomes)?;
                }
            }
        }
    }

    /// Where each command goes (reading the slot map when needed).
    fn targets(&mut self, refresh: Refresh, slots: &[Option<u16>]) -> Result<Vec<Target>> {
        match &mut self.link {
            Link::Single(_) => Ok(vec![Target::Server; slots.len()]),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.targets(refresh, slots),
        }
    }

    /// Sends one round; never fails as a whole: each part has its outcome.
    fn send_parts(&mut self, parts: &[Part]) -> Vec<Outcome> {
        match &mut self.link {
            Link::Single(s) => parts.iter().map(|p| s.send(p)).collect(),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.send_parts(parts),
        }
    }
}

/// The node key of a single server (its address; a Unix socket's path).
pub(crate) fn node_key(info: &ConnectionInfo) -> Addr {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            (host.clone(), *port)
        }
        other => (other.to_string(), 0),
    }
}

/// Connects with the crate's timeouts.
fn connect(client: &redis::Client) -> Result<redis::Connection> {
    let con = client.get_connection_with_timeout(CONNECT_TIMEOUT)?;
    con.set_read_timeout(Some(RESPONSE_TIMEOUT))?;
    con.set_write_timeout(Some(RESPONSE_TIMEOUT))?;
    Ok(con)
}

/// Writes one pipeline and reads its replies one by one, so that a failure
/// keeps the replies read before it.
fn pipeline(con: &mut redis::Connection, part: &Part) -> Outcome {
    if let Err(e) = con.send_packed_command(&part.pipe.get_packed_pipeline()) {
        return failed(Vec::new(), e);
    }
    receive(con, part.len())
}

/// Reads `n` replies (error replies in place).
fn receive(con: &mut redis::Connection, n: usize) -> Outcome {
    let mut replies = Vec::with_capacity(n);
    for _ in 0..n {
        match reply_in_place(con.recv_response()) {
            Ok(v) => replies.push(v),
            Err(e) => return failed(replies, e),
        }
    }
    Outcome::Replies(replies)
}

impl Single {
    /// The connection, reconnecting first when it broke earlier.
    fn con(&mut self) -> Result<&mut redis::Connection> {
        if self.con.is_none() {
            let Some(client) = &self.client else {
                return Err(Error::from(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "connection lost",
                    "it was handed to redis-patterns without its client, so it cannot reconnect"
                        .to_string(),
                ))));
            };
            self.con = Some(Box::new(connect(client)?));
        }
        Ok(self.con.as_mut().expect("set above"))
    }

    fn send(&mut self, part: &Part) -> Outcome {
        let outcome = match self.con() {
            Ok(con) => pipeline(con, part),
            Err(e) => return not_sent(e),
        };
        if matches!(outcome, Outcome::Failed { .. }) {
            // It may hold unread replies, or be dead: open a fresh one next.
            self.con = None;
        }
        outcome
    }
}

#[cfg(feature = "cluster")]
impl ClusterLink {
    fn targets(&mut self, refresh: Refresh, slots: &[Option<u16>]) -> Result<Vec<Target>> {
        if refresh.slots {
            self.slots = SlotMap::default();
        }
        if refresh.router && !self.seeds.is_empty() {
            self.router = None;
        }
        if self.base.is_none() {
            return Ok(vec![Target::Router; slots.len()]);
        }
        if self.slots.is_empty() && slots.iter().any(Option::is_some) {
            self.read_slots()?;
        }
        Ok(slots
            .iter()
            .map(|s| match s.and_then(|s| self.slots.primary_of(s)) {
                Some(addr) => Target::Node(addr.clone()),
                None => Target::Router,
            })
            .collect())
    }

    /// Reads the slot map from the first known node that answers.
    fn read_slots(&mut self) -> Result<()> {
        let mut last = None;
        for k in 0..self.known.len() {
            let at = (self.next + k) % self.known.len();
            let addr = self.known[at].clone();
            let reply = self
                .node(&addr)
                .and_then(|con| Ok(SlotMap::cmd().query::<Value>(con)?));
            match reply.and_then(SlotMap::parse) {
                Ok(map) if !map.is_empty() => {
                    for a in map.all_nodes() {
                        if !self.known.contains(a) {
                            self.known.push(a.clone());
                        }
                    }
                    self.slots = map;
                    self.next = at;
                    return Ok(());
                }
                Ok(_) => last = Some(Error::unexpected("CLUSTER SLOTS named no slot")),
                Err(e) => {
                    self.nodes.remove(&addr);
                    last = Some(e);
                }
            }
        }
        self.next = (self.next + 1) % self.known.len().max(1);
        Err(last.unwrap_or_else(|| Error::invalid("nodes", "no cluster node is known")))
    }

    fn node(&mut self, addr: &Addr) -> Result<&mut redis::Connection> {
        if !self.nodes.contains_key(addr) {
            let base = self
                .base
                .as_ref()
                .expect("nodes are reached only with a base");
            let con = connect(&redis::Client::open(node_info(base, &addr.0, addr.1))?)?;
            self.nodes.insert(addr.clone(), con);
        }
        Ok(self.nodes.get_mut(addr).expect("inserted above"))
    }

    fn router(&mut self) -> Result<&mut redis::cluster::ClusterConnection> {
        if self.router.is_none() {
            let seeds = seeds_and_known(&self.seeds, &self.known);
            self.router = Some(cluster_client(seeds)?.get_connection()?);
        }
        Ok(self.router.as_mut().expect("set above"))
    }

    /// Every node part's pipeline is written before any reply is read, so
    /// the nodes work concurrently; router parts go command by command.
    fn send_parts(&mut self, parts: &[Part]) -> Vec<Outcome> {
        let mut outcomes: Vec<Option<Outcome>> = parts.iter().map(|_| None).collect();
        for (part, outcome) in parts.iter().zip(outcomes.iter_mut()) {
            let Target::Node(addr) = &part.target else {
                continue;
            };
            match self.node(addr) {
                Err(e) => *outcome = Some(not_sent(e)),
                Ok(con) => {
                    if let Err(e) = con.send_packed_command(&part.pipe.get_packed_pipeline()) {
                        self.nodes.remove(addr);
                        *outcome = Some(failed(Vec::new(), e));
                    }
                }
            }
        }
        for (part, outcome) in parts.iter().zip(outcomes.iter_mut()) {
            if outcome.is_some() {
                continue;
            }
            *outcome = Some(match &part.target {
                Target::Node(addr) => {
                    let con = self.nodes.get_mut(addr).expect("written above");
                    let got = receive(con, part.len());
                    if matches!(got, Outcome::Failed { .. }) {
                        self.nodes.remove(addr);
                    }
                    got
                }
                _ => self.send_routed(part),
            });
        }
        outcomes
            .into_iter()
            .map(|o| o.expect("every part sent"))
            .collect()
    }

    /// A part through the router, command by command.
    fn send_routed(&mut self, part: &Part) -> Outcome {
        let router = match self.router() {
            Ok(r) => r,
            Err(e) => return not_sent(e),
        };
        let mut replies = Vec::with_capacity(part.len());
        for (cmd, route) in part.pipe.cmd_iter().zip(&part.routes) {
            let reply = match route {
                Some(slot) => router.route_command(cmd, to_slot_node(*slot)),
                None => redis::ConnectionLike::req_command(router, cmd),
            };
            match reply_in_place(reply) {
                Ok(v) => replies.push(v),
                Err(e) => {
                    if !self.seeds.is_empty() {
                        self.router = None;
                    }
                    return failed(replies, e);
                }
            }
        }
        Outcome::Replies(replies)
    }
}
