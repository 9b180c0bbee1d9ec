//! The async driver: [`AsyncConnection`], one cheaply cloned connection
//! type for one server or a Redis Cluster, which runs any [`Op`] on tokio.
//!
//! [`AsyncConnection::open`] asks the server once (`INFO cluster`); on one
//! server it uses redis-rs's `ConnectionManager` (which reconnects after the
//! server restarts), on a cluster node a cluster link of its own: one
//! multiplexed connection per node, routed by its own slot map (read anew
//! after a redirect or a lost node), so that a batch goes out as one
//! pipeline per node, all sent at once (one round trip for the whole
//! batch); commands without a key go through redis-rs's async cluster
//! connection.
//!
//! The driver only does the I/O: what to send again, when, and what fails
//! is decided once for both drivers by the exchange ([`Batch`] and
//! [`RetryPolicy`]). A connection that broke is dropped and opened again on
//! its next use; clones share the connections, so one reconnect serves all.
//!
//! A [`Step::Wait`] registers with a hub of subscription connections shared
//! by the connection's clones (see [`subscriber_async`](super::subscriber_async)).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use redis::aio::ConnectionLike as _;
use redis::{Cmd, ConnectionInfo, IntoConnectionInfo, Value};

use super::batch::{
    Addr, Batch, Exchange, Next, Outcome, Part, Refresh, Target, failed, not_sent, reply_in_place,
};
use super::call_mode::CallMode;
use super::conn::{CONNECT_TIMEOUT, RESPONSE_TIMEOUT, cluster_enabled, info_cluster, node_info};
use super::durability::Durability;
use super::op::{Env, Op, Replies, Step, wait_replies};
use super::retry::RetryPolicy;
use super::slots::SlotMap;
use super::subscriber_async::{Hub, Waits};
use crate::error::{Error, Result};
use crate::keys::cluster_slot;

/// An async connection to one server or to a Redis Cluster; runs every
/// operation of the crate (`op.run_async(&mut con).await`), retrying by its
/// [`RetryPolicy`] and waiting for replicas by its [`Durability`]. Clones
/// share the underlying connections (commands of concurrent tasks are
/// multiplexed); each clone has its own policy and durability, copied from
/// the original.
#[derive(Clone)]
pub struct AsyncConnection {
    link: Link,
    env: Env,
    policy: RetryPolicy,
    durability: Durability,
    /// How to reach the server (or, with another address, each cluster
    /// node), for the subscriptions of [`Step::Wait`]; `None` for a wrapped
    /// connection without its client, whose waits only sleep.
    info: Option<Arc<ConnectionInfo>>,
    /// The subscription connections, shared by the clones.
    hub: Arc<Hub>,
}

impl std::fmt::Debug for AsyncConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncConnection")
            .field("cluster", &self.env.cluster)
            .field("policy", &self.policy)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
enum Link {
    Manager(redis::aio::ConnectionManager),
    Multiplexed(Arc<Mux>),
    #[cfg(feature = "cluster")]
    Cluster(Arc<ClusterLink>),
}

/// A multiplexed connection, and the client to open it again with.
struct Mux {
    client: Option<redis::Client>,
    /// The connection (none after it broke) and its generation: a handle
    /// that failed drops the connection only if no clone replaced it since.
    con: Mutex<(Option<redis::aio::MultiplexedConnection>, u64)>,
}

#[cfg(feature = "cluster")]
struct ClusterLink {
    /// The cluster client for commands without a key; `None` until built
    /// again (after it failed).
    router: Mutex<Option<redis::cluster_async::ClusterConnection>>,
    /// Where the router is built from; empty when it was handed to us.
    seeds: Vec<ConnectionInfo>,
    /// How to reach a node; `None` when the router was handed to us, and
    /// every command then goes through it.
    base: Option<ConnectionInfo>,
    nodes: Mutex<HashMap<Addr, redis::aio::MultiplexedConnection>>,
    slots: Mutex<SlotMap>,
    /// Every node seen, asked in turn for the slot map.
    known: Mutex<Vec<Addr>>,
}

fn async_config() -> redis::AsyncConnectionConfig {
    redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
}

async fn multiplexed(client: &redis::Client) -> Result<redis::aio::MultiplexedConnection> {
    Ok(client
        .get_multiplexed_async_connection_with_config(&async_config())
        .await?)
}

impl AsyncConnection {
    /// Connects to `url`; on a Redis Cluster node, to its cluster.
    pub async fn open(url: impl IntoConnectionInfo) -> Result<Self> {
        let info = url.into_connection_info()?;
        let client = redis::Client::open(info.clone())?;
        // One connection attempt per call: the exchange decides about
        // retries and their backoff.
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(0);
        let mut manager = client.get_connection_manager_with_config(config).await?;
        let reply: Value = info_cluster().query_async(&mut manager).await?;
        if cluster_enabled(&reply) {
            #[cfg(feature = "cluster")]
            return Self::cluster([info]).await;
            #[cfg(not(feature = "cluster"))]
            return Err(Error::invalid(
                "url",
                "names a Redis Cluster node: enable the crate's `cluster` feature",
            ));
        }
        let mut con = Self::with_link(Link::Manager(manager), false);
        con.info = Some(Arc::new(info));
        Ok(con)
    }

    /// Connects to the Redis Cluster these nodes (any of them) belong to.
    #[cfg(feature = "cluster")]
    pub async fn cluster<T: IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
    ) -> Result<Self> {
        let seeds = nodes
            .into_iter()
            .map(|n| n.into_connection_info())
            .collect::<redis::RedisResult<Vec<_>>>()?;
        let base = seeds
            .first()
            .cloned()
            .ok_or_else(|| Error::invalid("nodes", "must name at least one node"))?;
        let router = super::conn::cluster_client(seeds.clone())?
            .get_async_connection()
            .await?;
        let known = seeds.iter().filter_map(super::conn::addr_of).collect();
        let mut con = Self::with_link(
            Link::Cluster(Arc::new(ClusterLink {
                router: Mutex::new(Some(router)),
                seeds,
                base: Some(base.clone()),
                nodes: Mutex::new(HashMap::new()),
                slots: Mutex::new(SlotMap::default()),
                known: Mutex::new(known),
            })),
            true,
        );
        con.info = Some(Arc::new(base));
        Ok(con)
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
            info: None,
            hub: Arc::default(),
        }
    }

    /// Wraps a `ConnectionManager` of one server (refused for a cluster
    /// node). It reconnects by its own settings; each call is retried by
    /// this connection's policy.
    pub async fn from_manager(mut con: redis::aio::ConnectionManager) -> Result<Self> {
        refuse_cluster_node(info_cluster().query_async(&mut con).await?)?;
        Ok(Self::with_link(Link::Manager(con), false))
    }

    /// Wraps a `MultiplexedConnection` of one server (refused for a cluster
    /// node). Without its client it cannot reconnect after the server
    /// restarts: calls fail once it broke. Prefer
    /// [`AsyncConnection::from_multiplexed_with_client`],
    /// [`AsyncConnection::open`] or a `ConnectionManager`.
    pub async fn from_multiplexed(con: redis::aio::MultiplexedConnection) -> Result<Self> {
        Self::wrap_multiplexed(None, con).await
    }

    /// Wraps a `MultiplexedConnection` of one server opened from `client`
    /// (refused for a cluster node). After it breaks (the server restarted,
    /// the network failed), the next call opens a new one from `client`,
    /// shared by every clone.
    pub async fn from_multiplexed_with_client(
        client: redis::Client,
        con: redis::aio::MultiplexedConnection,
    ) -> Result<Self> {
        Self::wrap_multiplexed(Some(client), con).await
    }

    async fn wrap_multiplexed(
        client: Option<redis::Client>,
        mut con: redis::aio::MultiplexedConnection,
    ) -> Result<Self> {
        refuse_cluster_node(info_cluster().query_async(&mut con).await?)?;
        let info = client
            .as_ref()
            .map(|c| Arc::new(c.get_connection_info().clone()));
        let mut con = Self::with_link(
            Link::Multiplexed(Arc::new(Mux {
                client,
                con: Mutex::new((Some(con), 0)),
            })),
            false,
        );
        con.info = info;
        Ok(con)
    }

    /// Wraps redis-rs's async cluster connection. Without the nodes' URLs
    /// it cannot open connections of its own, so batches go command by
    /// command through it, it is never rebuilt, and it retries and follows
    /// redirects by its own settings (redis-rs's default resends a request
    /// after a lost connection: build its client with `.retries(0)` to
    /// leave that to this crate). [`AsyncConnection::cluster`] does better.
    #[cfg(feature = "cluster")]
    pub fn from_cluster(router: redis::cluster_async::ClusterConnection) -> Self {
        Self::with_link(
            Link::Cluster(Arc::new(ClusterLink {
                router: Mutex::new(Some(router)),
                seeds: Vec::new(),
                base: None,
                nodes: Mutex::new(HashMap::new()),
                slots: Mutex::new(SlotMap::default()),
                known: Mutex::new(Vec::new()),
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

    /// Sends script calls as `mode` says from now on (this handle only:
    /// clones made before keep their mode): [`CallMode::Functions`] sends
    /// `FCALL` / `FCALL_RO` of the [library](crate::functions) and loads it
    /// where it is missing.
    pub fn set_call_mode(&mut self, mode: CallMode) {
        self.env.call_mode = mode;
    }

    /// The connection with its call mode set (see
    /// [`AsyncConnection::set_call_mode`]).
    pub fn with_call_mode(mut self, mode: CallMode) -> Self {
        self.set_call_mode(mode);
        self
    }

    /// How this connection retries (see [`RetryPolicy`]).
    pub fn retry_policy(&self) -> RetryPolicy {
        self.policy
    }

    /// Sets how this connection (this clone) retries.
    pub fn set_retry_policy(&mut self, policy: RetryPolicy) {
        self.policy = policy;
    }

    /// How many replicas must acknowledge writes (see [`Durability`]).
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Sets how many replicas must acknowledge this clone's writes. Refused
    /// on a wrapped redis-rs cluster connection
    /// ([`AsyncConnection::from_cluster`]), which sends commands one by one.
    pub fn set_durability(&mut self, durability: Durability) -> Result<()> {
        #[cfg(feature = "cluster")]
        if let (Link::Cluster(c), Durability::Replicas { .. }) = (&self.link, durability)
            && c.base.is_none()
        {
            return Err(Error::invalid(
                "durability",
                "needs a connection that sends each node's commands itself (AsyncConnection::cluster or AsyncConnection::open), not a wrapped ClusterConnection",
            ));
        }
        self.durability = durability;
        Ok(())
    }

    /// Runs one plain command (routed by its key on a cluster) — for what
    /// the patterns do not cover. Error replies are returned as errors. It
    /// is retried like a batch's command (see
    /// [`Connection::query`](crate::Connection::query)).
    pub async fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        let mut batch = Batch::new();
        batch.add_keyless(cmd.clone());
        self.exchange(batch).await?.take()
    }

    /// The async driver: runs `op` to completion. The subscriptions its
    /// waits made are dropped with `waits` when it returns.
    pub(crate) async fn execute<T: Send + 'static>(&mut self, mut op: Op<T>) -> Result<T> {
        let env = self.env;
        let mut replies = None;
        let mut waits = Waits::default();
        loop {
            let step = op.step(&env, replies.take())?;
            match step {
                Step::Done(v) => return Ok(v),
                Step::Sleep(d) => {
                    tokio::time::sleep(d).await;
                    replies = Some(Replies::default());
                }
                Step::Wait { channel, timeout } => {
                    let woken = self.wait(&channel, timeout, &mut waits).await;
                    replies = Some(wait_replies(woken));
                }
                Step::Send(batch) => replies = Some(self.exchange(batch).await?),
            }
        }
    }

    /// One [`Step::Wait`], through the hub, on the node that serves the
    /// channel's slot; a plain sleep for a connection that cannot open one.
    async fn wait(&mut self, channel: &[u8], timeout: Duration, waits: &mut Waits) -> bool {
        let Some((node, info)) = self.wait_target(cluster_slot(channel)).await else {
            tokio::time::sleep(timeout).await;
            return false;
        };
        let hub = Arc::clone(&self.hub);
        let (woken, refused) = hub.wait(node, &info, channel, timeout, waits).await;
        if refused {
            #[cfg(feature = "cluster")]
            if let Link::Cluster(c) = &self.link {
                *c.slots.lock().expect("slot map lock") = SlotMap::default();
            }
        }
        woken
    }

    /// The node that serves `slot` and how to connect to it.
    async fn wait_target(&mut self, slot: u16) -> Option<(Addr, ConnectionInfo)> {
        let info = self.info.clone()?;
        match &self.link {
            Link::Manager(_) | Link::Multiplexed(_) => {
                let _ = slot;
                Some((super::conn::node_key(&info), (*info).clone()))
            }
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => {
                let mut map = c.slots.lock().expect("slot map lock").clone();
                if map.is_empty() {
                    map = c.read_slots().await.ok()?;
                }
                let (host, port) = map.primary_of(slot)?.clone();
                let node = super::conn::node_info(&info, &host, port);
                Some(((host, port), node))
            }
        }
    }

    /// One batch: the exchange decides, this sends.
    async fn exchange(&mut self, mut batch: Batch) -> Result<Replies> {
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
                Next::Sleep(d) => tokio::time::sleep(d).await,
                Next::Send(refresh) => {
                    let targets = match self.targets(refresh, &ex.pending_slots()).await {
                        Ok(t) => t,
                        Err(e) => {
                            ex.unreachable(e)?;
                            continue;
                        }
                    };
                    let parts = ex.round(targets);
                    let outcomes = self.send_parts(&parts).await;
                    ex.settle(parts, outcomes)?;
                }
            }
        }
    }

    async fn targets(&self, refresh: Refresh, slots: &[Option<u16>]) -> Result<Vec<Target>> {
        match &self.link {
            Link::Manager(_) | Link::Multiplexed(_) => Ok(vec![Target::Server; slots.len()]),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.targets(refresh, slots).await,
        }
    }

    /// Sends one round, every part at once; each part has its outcome.
    async fn send_parts(&self, parts: &[Part]) -> Vec<Outcome> {
        match &self.link {
            Link::Manager(con) => {
                let mut con = con.clone();
                let mut out = Vec::with_capacity(parts.len());
                for part in parts {
                    out.push(match part.pipe.query_async::<Vec<Value>>(&mut con).await {
                        Ok(v) => Outcome::Replies(v),
                        Err(e) => failed(Vec::new(), e),
                    });
                }
                out
            }
            Link::Multiplexed(mux) => {
                let mut out = Vec::with_capacity(parts.len());
                for part in parts {
                    out.push(mux.send(part).await);
                }
                out
            }
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => {
                let sends = parts.iter().map(|part| {
                    let c = c.clone();
                    let target = part.target.clone();
                    let pipe = part.pipe.clone();
                    let routes = part.routes.clone();
                    async move { c.send(&target, &pipe, &routes).await }
                });
                join_all(sends.collect()).await
            }
        }
    }
}

impl Mux {
    async fn send(&self, part: &Part) -> Outcome {
        let (current, generation) = self.con.lock().expect("connection lock").clone();
        let mut con = match (current, &self.client) {
            (Some(con), _) => con,
            (None, Some(client)) => match multiplexed(client).await {
                Ok(con) => {
                    let mut slot = self.con.lock().expect("connection lock");
                    if slot.1 == generation {
                        *slot = (Some(con.clone()), generation + 1);
                    }
                    con
                }
                Err(e) => return not_sent(e),
            },
            (None, None) => {
                return not_sent(Error::from(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "connection lost",
                    "it was handed to redis-patterns without its client, so it cannot reconnect"
                        .to_string(),
                ))));
            }
        };
        match part.pipe.query_async::<Vec<Value>>(&mut con).await {
            Ok(v) => Outcome::Replies(v),
            Err(e) => {
                if e.is_unrecoverable_error() && self.client.is_some() {
                    let mut slot = self.con.lock().expect("connection lock");
                    if slot.1 == generation {
                        slot.0 = None;
                    }
                }
                failed(Vec::new(), e)
            }
        }
    }
}

#[cfg(feature = "cluster")]
impl ClusterLink {
    async fn targets(&self, refresh: Refresh, slots: &[Option<u16>]) -> Result<Vec<Target>> {
        if refresh.slots {
            *self.slots.lock().expect("slot map lock") = SlotMap::default();
        }
        if refresh.router && !self.seeds.is_empty() {
            *self.router.lock().expect("router lock") = None;
        }
        if self.base.is_none() {
            return Ok(vec![Target::Router; slots.len()]);
        }
        let mut map = self.slots.lock().expect("slot map lock").clone();
        if map.is_empty() && slots.iter().any(Option::is_some) {
            map = self.read_slots().await?;
        }
        Ok(slots
            .iter()
            .map(|s| match s.and_then(|s| map.primary_of(s)) {
                Some(addr) => Target::Node(addr.clone()),
                None => Target::Router,
            })
            .collect())
    }

    /// Reads the slot map from the first known node that answers.
    async fn read_slots(&self) -> Result<SlotMap> {
        let known = self.known.lock().expect("known lock").clone();
        let mut last = None;
        for addr in &known {
            let reply = match self.node(addr).await {
                Ok(mut con) => SlotMap::cmd()
                    .query_async::<Value>(&mut con)
                    .await
                    .map_err(Error::from),
                Err(e) => Err(e),
            };
            match reply.and_then(SlotMap::parse) {
                Ok(map) if !map.is_empty() => {
                    let mut known = self.known.lock().expect("known lock");
                    // Ask the node that answered first next time.
                    if let Some(at) = known.iter().position(|a| a == addr) {
                        known.rotate_left(at);
                    }
                    for a in map.all_nodes() {
                        if !known.contains(a) {
                            known.push(a.clone());
                        }
                    }
                    drop(known);
                    *self.slots.lock().expect("slot map lock") = map.clone();
                    return Ok(map);
                }
                Ok(_) => last = Some(Error::unexpected("CLUSTER SLOTS named no slot")),
                Err(e) => {
                    self.nodes.lock().expect("nodes lock").remove(addr);
                    last = Some(e);
                }
            }
        }
        if !known.is_empty() {
            self.known.lock().expect("known lock").rotate_left(1);
        }
        Err(last.unwrap_or_else(|| Error::invalid("nodes", "no cluster node is known")))
    }

    async fn node(&self, addr: &Addr) -> Result<redis::aio::MultiplexedConnection> {
        if let Some(con) = self.nodes.lock().expect("nodes lock").get(addr) {
            return Ok(con.clone());
        }
        let base = self
            .base
            .as_ref()
            .expect("nodes are reached only with a base");
        let con = multiplexed(&redis::Client::open(node_info(base, &addr.0, addr.1))?).await?;
        self.nodes
            .lock()
            .expect("nodes lock")
            .entry(addr.clone())
            .or_insert(con.clone());
        Ok(con)
    }

    async fn router(&self) -> Result<redis::cluster_async::ClusterConnection> {
        if let Some(r) = self.router.lock().expect("router lock").clone() {
            return Ok(r);
        }
        let known = self.known.lock().expect("known lock").clone();
        let seeds = super::conn::seeds_and_known(&self.seeds, &known);
        let router = super::conn::cluster_client(seeds)?
            .get_async_connection()
            .await?;
        *self.router.lock().expect("router lock") = Some(router.clone());
        Ok(router)
    }

    async fn send(
        &self,
        target: &Target,
        pipe: &redis::Pipeline,
        routes: &[Option<u16>],
    ) -> Outcome {
        match target {
            Target::Node(addr) => {
                let mut con = match self.node(addr).await {
                    Ok(con) => con,
                    Err(e) => return not_sent(e),
                };
                match pipe.query_async::<Vec<Value>>(&mut con).await {
                    Ok(v) => Outcome::Replies(v),
                    Err(e) => {
                        self.nodes.lock().expect("nodes lock").remove(addr);
                        failed(Vec::new(), e)
                    }
                }
            }
            _ => {
                let mut router = match self.router().await {
                    Ok(r) => r,
                    Err(e) => return not_sent(e),
                };
                let mut replies = Vec::with_capacity(pipe.len());
                for (cmd, route) in pipe.cmd_iter().zip(routes) {
                    let reply = match route {
                        Some(slot) => {
                            router
                                .route_command(cmd.clone(), super::conn::to_slot_node(*slot))
                                .await
                        }
                        None => router.req_packed_command(cmd).await,
                    };
                    match reply_in_place(reply) {
                        Ok(v) => replies.push(v),
                        Err(e) => {
                            if !self.seeds.is_empty() {
                                *self.router.lock().expect("router lock") = None;
                            }
                            return failed(replies, e);
                        }
                    }
                }
                Outcome::Replies(replies)
            }
        }
    }
}

fn refuse_cluster_node(info: Value) -> Result<()> {
    if cluster_enabled(&info) {
        return Err(Error::invalid(
            "connection",
            "talks to a Redis Cluster node and cannot follow keys to other nodes: open its url with AsyncConnection::open",
        ));
    }
    Ok(())
}

type BoxedSend<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Polls every future until all are done; results in order.
async fn join_all<T: Send + 'static>(
    futures: Vec<impl Future<Output = T> + Send + 'static>,
) -> Vec<T> {
    let mut pending: Vec<Option<BoxedSend<T>>> = futures
        .into_iter()
        .map(|f| Some(Box::pin(f) as BoxedSend<T>))
        .collect();
    let mut out: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx: &mut Context<'_>| {
        let mut all_done = true;
        for (slot, result) in pending.iter_mut().zip(out.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *result = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => all_done = false,
                }
            }
        }
        if all_done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    out.into_iter()
        .map(|v| v.expect("every future finished"))
        .collect()
}
