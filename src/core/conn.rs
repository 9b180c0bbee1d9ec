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
//! The driver only does the I/O: the op's steps, what to send again, when,
//! and what fails are decided once for both drivers by the run
//! ([`drive`](super::drive)) and the exchange ([`Batch`] and
//! [`RetryPolicy`]); where each command goes by [`nodes`](super::nodes). A
//! connection that broke is dropped and opened again on its next use.
//!
//! A [`Step::Wait`](super::Step::Wait) subscribes (`SSUBSCRIBE`) on a subscription connection
//! of its own to the node that serves the channel's slot (see
//! [`subscriber`](super::subscriber)).

use std::time::Duration;

use redis::{Cmd, ConnectionInfo, IntoConnectionInfo, Value};

use super::batch::Batch;
use super::call_mode::CallMode;
#[cfg(feature = "cluster")]
use super::cluster::{Ask, ClusterState, Lookup, SlotRead, route};
use super::drive::{Input, Io, Run};
use super::durability::Durability;
use super::exchange::{
    Addr, Outcome, Part, Refresh, Routed, Target, failed, not_sent, reply_in_place,
};
#[cfg(not(feature = "cluster"))]
use super::nodes::cluster_feature_needed;
use super::nodes::{
    CONNECT_TIMEOUT, RESPONSE_TIMEOUT, Tls, cannot_reconnect, cluster_enabled, info_cluster,
    node_key, refuse_cluster_node,
};
#[cfg(feature = "cluster")]
use super::nodes::{Seeds, cluster_client, to_slot_node};
use super::op::Op;
use super::retry::RetryPolicy;
use super::settings::{Settings, driver_settings};
#[cfg(feature = "cluster")]
use super::slots::SlotMap;
use super::subscriber::Subscriber;
use super::wait_stats::WaitStats;
use crate::error::{Error, Result};
use crate::keys::cluster_slot;

/// A sync connection to one server or to a Redis Cluster; runs every
/// operation of the crate (`op.run(&mut con)`), retrying by its
/// [`RetryPolicy`] and waiting for replicas by its [`Durability`].
pub struct Connection {
    link: Link,
    settings: Settings,
    /// The subscription connections of [`Step::Wait`](super::Step::Wait).
    subscriber: Subscriber,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.settings.debug(f, "Connection")
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
    /// How the connection broke, for the error of one that cannot reconnect.
    lost: Option<String>,
}

/// A cluster: its state, and the I/O it asks for.
#[cfg(feature = "cluster")]
struct ClusterLink {
    state: ClusterState<redis::Connection, redis::cluster::ClusterConnection>,
}

#[cfg(feature = "cluster")]
impl ClusterLink {
    /// A link that opens connections of its own from `own`, or (`None`)
    /// one that sends everything through `router`.
    fn new(router: redis::cluster::ClusterConnection, own: Option<Seeds>) -> Self {
        Self {
            state: ClusterState::new(router, own),
        }
    }
}

impl Connection {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/`, or with the `tls`
    /// feature `rediss://host:6380/`, verified against the system's root
    /// certificates). When the server is a Redis Cluster node, connects to
    /// the cluster it belongs to.
    pub fn open(url: impl IntoConnectionInfo) -> Result<Self> {
        Self::open_with(url.into_connection_info()?, Tls::default())
    }

    /// Connects to a `rediss://` URL with these certificates: a private CA
    /// (`root_cert`, PEM) instead of the system's roots, and a client
    /// certificate when the server asks for one (`client_tls`). Nothing
    /// accepts an unverified certificate. On a cluster node, connects to
    /// its cluster, every node reached with the same certificates.
    #[cfg(feature = "tls")]
    pub fn open_tls(url: impl IntoConnectionInfo, certs: redis::TlsCertificates) -> Result<Self> {
        Self::open_with(url.into_connection_info()?, Tls::with(certs))
    }

    /// `base` with another host and port (same credentials and TLS
    /// settings): how to reach another node of the cluster `base` reaches
    /// (e.g. each node `CLUSTER NODES` lists).
    pub fn node_info(base: &ConnectionInfo, host: &str, port: u16) -> ConnectionInfo {
        super::nodes::node_info(base, host, port)
    }

    fn open_with(info: ConnectionInfo, tls: Tls) -> Result<Self> {
        let client = tls.client(info)?;
        let mut con = connect(&client)?;
        let reply: Value = info_cluster().query(&mut con)?;
        if cluster_enabled(&reply) {
            #[cfg(feature = "cluster")]
            return Self::cluster_with([client.get_connection_info().clone()], tls);
            #[cfg(not(feature = "cluster"))]
            return Err(cluster_feature_needed());
        }
        Ok(Self::with_link(Link::Single(Single {
            client: Some(Box::new(client)),
            con: Some(Box::new(con)),
            lost: None,
        })))
    }

    /// Connects to the Redis Cluster that these nodes (any of them) belong to.
    #[cfg(feature = "cluster")]
    pub fn cluster<T: IntoConnectionInfo>(nodes: impl IntoIterator<Item = T>) -> Result<Self> {
        Self::cluster_with(nodes, Tls::default())
    }

    #[cfg(feature = "cluster")]
    fn cluster_with<T: IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
        tls: Tls,
    ) -> Result<Self> {
        let seeds = Seeds::of(nodes, tls)?;
        let router = cluster_client(seeds.seeds.clone(), &seeds.tls)?.get_connection()?;
        let link = ClusterLink::new(router, Some(seeds));
        Ok(Self::with_link(Link::Cluster(Box::new(link))))
    }

    fn with_link(link: Link) -> Self {
        let cluster = !matches!(link, Link::Single(_));
        let mut con = Self {
            link,
            settings: Settings::new(cluster),
            subscriber: Subscriber::default(),
        };
        con.settings.per_node = con.sends_per_node();
        con
    }

    /// Wraps a connection to one server. A connection to a Redis Cluster
    /// node is refused: it could not follow keys to other nodes (open the
    /// node's URL with [`Connection::open`] instead). Without its client it
    /// cannot reconnect after the server restarts: a call fails once it
    /// broke (prefer [`Connection::open`]).
    pub fn from_redis(mut con: redis::Connection) -> Result<Self> {
        refuse_cluster_node(&info_cluster().query(&mut con)?, "Connection")?;
        Ok(Self::with_link(Link::Single(Single {
            client: None,
            con: Some(Box::new(con)),
            lost: None,
        })))
    }

    /// Wraps redis-rs's sync cluster connection. Without the nodes' URLs it
    /// cannot open connections of its own, so batches go command by command
    /// through it, it is never rebuilt, and it retries and follows
    /// redirects by its own settings (redis-rs's default resends a request
    /// after a lost connection: build its client with `.retries(0)` to leave
    /// that to this crate). [`Connection::cluster`] does better.
    #[cfg(feature = "cluster")]
    pub fn from_cluster(con: redis::cluster::ClusterConnection) -> Self {
        Self::with_link(Link::Cluster(Box::new(ClusterLink::new(con, None))))
    }

    driver_settings!("Connection", "", "");

    /// What the waits of this connection's operations met (lock, semaphore
    /// and read-write lock waits): how many a message woke, and how many
    /// could not subscribe and slept out their timeout, with the server's
    /// refusal ([`WaitStats`]).
    pub fn wait_stats(&self) -> WaitStats {
        self.subscriber.stats()
    }

    /// Detected caps are kept in the settings (for the `caps` accessor).
    fn detected_caps(&self) -> Option<crate::core::Caps> {
        None
    }

    /// Whether it sends each node's commands itself (not a wrapped
    /// `ClusterConnection`), so that a `WAIT` can follow them.
    fn sends_per_node(&self) -> bool {
        match &self.link {
            Link::Single(_) => true,
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.state.own().is_some(),
        }
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
        self.drive(Op::send(batch, Ok))?.take()
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
                lost: None,
            }),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) if let Some(own) = c.state.own() => {
                let Self { link, .. } = Self::cluster_with(own.seeds.clone(), own.tls.clone())?;
                link
            }
            _ => {
                return Err(Error::invalid(
                    "connection",
                    "was wrapped without its client and cannot open another: open it with Connection::open",
                ));
            }
        };
        let mut con = Self::with_link(link);
        con.settings = self.settings;
        Ok(con)
    }

    /// The sync driver: runs `op` to completion; then drops the
    /// subscriptions its waits made.
    pub(crate) fn execute<T: Send + 'static>(&mut self, op: Op<T>) -> Result<T> {
        let result = self.drive(op);
        self.subscriber.finish();
        result
    }

    /// The I/O of a [`Run`].
    fn drive<T: Send + 'static>(&mut self, op: Op<T>) -> Result<T> {
        let mut run = Run::new(op, self.settings);
        let result = self.drive_run(&mut run);
        self.settings.env.caps = run.caps();
        result
    }

    fn drive_run<T: Send + 'static>(&mut self, run: &mut Run<T>) -> Result<T> {
        let mut input = Input::Start;
        loop {
            input = match run.next(input)? {
                Io::Done(v) => return Ok(v),
                Io::Sleep(d) => {
                    std::thread::sleep(d);
                    Input::Slept
                }
                Io::Wait {
                    channel,
                    to,
                    timeout,
                } => Input::Woken(self.wait(&channel, to.as_deref(), timeout)),
                Io::Route(refresh, slots) => Input::Targets(self.targets(refresh, &slots)),
                Io::Send(parts) => Input::Sent(self.send_parts(parts)),
            };
        }
    }

    /// One wait for a message on `channel`: on the subscription connection
    /// to the node that serves the channel's slot; a plain sleep when the
    /// connection cannot open one (wrapped without its client).
    fn wait(&mut self, channel: &[u8], to: Option<&[u8]>, timeout: Duration) -> bool {
        let Some((node, info)) = self.wait_target(cluster_slot(channel)) else {
            self.subscriber.sleep(timeout);
            return false;
        };
        let mut stale = false;
        let woken = self
            .subscriber
            .wait(node, &info, (channel, to), timeout, &mut || stale = true);
        if stale {
            #[cfg(feature = "cluster")]
            if let Link::Cluster(c) = &mut self.link {
                c.state.forget_map();
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
            Link::Cluster(c) => match c.state.wait_target(slot) {
                Lookup::Found(target) => target,
                Lookup::ReadMap => {
                    let map = c.read_slots().ok()?;
                    c.state.serving(&map, slot)
                }
            },
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
            let client = self.client.as_ref().expect("checked by send");
            self.con = Some(Box::new(connect(client)?));
        }
        Ok(self.con.as_mut().expect("set above"))
    }

    fn send(&mut self, part: &Part) -> Outcome {
        if self.con.is_none() && self.client.is_none() {
            return Outcome::Gone(cannot_reconnect(self.lost.as_deref()));
        }
        let outcome = match self.con() {
            Ok(con) => pipeline(con, part),
            Err(e) => return not_sent(e),
        };
        if let Outcome::Failed { error, .. } = &outcome {
            // It may hold unread replies, or be dead: open a fresh one next.
            self.con = None;
            self.lost = Some(error.to_string());
        }
        outcome
    }
}

#[cfg(feature = "cluster")]
impl ClusterLink {
    fn targets(&mut self, refresh: Refresh, slots: &[Option<u16>]) -> Result<Vec<Target>> {
        match self.state.targets(refresh, slots) {
            Lookup::Found(targets) => Ok(targets),
            Lookup::ReadMap => Ok(route(&self.read_slots()?, slots)),
        }
    }

    /// Reads the slot map from the first known node that answers.
    fn read_slots(&mut self) -> Result<SlotMap> {
        let mut read = SlotRead::new(&self.state);
        let mut reply = None;
        loop {
            match read.step(&mut self.state, reply.take()) {
                Ask::Done(map) => return map,
                Ask::Node(addr) => {
                    let con = self.node(&addr);
                    reply = Some(con.and_then(|con| Ok(SlotMap::cmd().query::<Value>(con)?)));
                }
            }
        }
    }

    fn node(&mut self, addr: &Addr) -> Result<&mut redis::Connection> {
        if self.state.node(addr).is_none() {
            let con = connect(&redis::Client::open(self.state.node_info(addr))?)?;
            return Ok(self.state.keep_node(addr, con));
        }
        Ok(self.state.node(addr).expect("open"))
    }

    fn router(&mut self) -> Result<&mut redis::cluster::ClusterConnection> {
        if self.state.router().is_none() {
            let router = self.state.router_client()?.get_connection()?;
            self.state.keep_router(router);
        }
        Ok(self.state.router().expect("kept above"))
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
                        self.state.drop_node(addr);
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
                    let con = self.state.node(addr).expect("written above");
                    let got = receive(con, part.len());
                    if matches!(got, Outcome::Failed { .. }) {
                        self.state.drop_node(addr);
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
            // A wrapped router that broke is not rebuilt: say so at once.
            Err(e) if matches!(e.kind(), crate::ErrorKind::ConnectionLost { .. }) => {
                return Outcome::Gone(e);
            }
            Err(e) => return not_sent(e),
        };
        let mut routed = Routed::new(part.len());
        for (cmd, route) in part.pipe.cmd_iter().zip(&part.routes) {
            let reply = match route {
                Some(slot) => router.route_command(cmd, to_slot_node(*slot)),
                None => redis::ConnectionLike::req_command(router, cmd),
            };
            let Some(outcome) = routed.file(reply) else {
                continue;
            };
            if matches!(outcome, Outcome::Failed { .. }) {
                self.state.router_failed();
            }
            return outcome;
        }
        Routed::empty()
    }
}
