//! The async driver: [`AsyncConnection`], one cheaply cloned connection
//! type for one server or a Redis Cluster, which runs any [`Op`] on tokio.
//!
//! [`AsyncConnection::open`] asks the server once (`INFO cluster`); on one
//! server it uses redis-rs's `ConnectionManager` (which reconnects after the
//! server restarts), on a cluster node the async cluster connection. On a
//! cluster a batch goes out as one pipeline per node, all sent at once (one
//! round trip for the whole batch), routed by redis-rs to the node that
//! serves the group's slots.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use redis::aio::ConnectionLike as _;
use redis::{Cmd, IntoConnectionInfo, Value};

use super::batch::{Batch, Exchange, Groups, Part, Target, reply_in_place};
use super::call_mode::CallMode;
use super::conn::{cluster_enabled, info_cluster};
use super::op::{Env, Op, Replies, Step};
use super::slots::SlotMap;
use crate::error::{Error, Result};
use crate::script::ScriptInfo;

/// How long connecting may take.
pub(crate) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long one reply may take (redis-rs's async default is 500 ms, which a
/// large batch or a busy machine exceeds).
pub(crate) const RESPONSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// An async connection to one server or to a Redis Cluster; runs every
/// operation of the crate (`op.run_async(&mut con).await`). Clones share the
/// underlying connection (commands of concurrent tasks are multiplexed).
#[derive(Clone)]
pub struct AsyncConnection {
    link: Link,
    env: Env,
}

impl std::fmt::Debug for AsyncConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncConnection")
            .field("cluster", &self.env.cluster)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
enum Link {
    Manager(redis::aio::ConnectionManager),
    Multiplexed(redis::aio::MultiplexedConnection),
    #[cfg(feature = "cluster")]
    Cluster {
        router: redis::cluster_async::ClusterConnection,
        slots: Arc<Mutex<SlotMap>>,
    },
}

impl AsyncConnection {
    /// Connects to `url`; on a Redis Cluster node, to its cluster.
    pub async fn open(url: impl IntoConnectionInfo) -> Result<Self> {
        let info = url.into_connection_info()?;
        let client = redis::Client::open(info.clone())?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
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
        Ok(Self::single(Link::Manager(manager)))
    }

    /// Connects to the Redis Cluster these nodes (any of them) belong to.
    #[cfg(feature = "cluster")]
    pub async fn cluster<T: IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
    ) -> Result<Self> {
        let router = super::conn::cluster_client(nodes)?
            .get_async_connection()
            .await?;
        Ok(Self::from_cluster(router))
    }

    /// Wraps a `ConnectionManager` of one server (refused for a cluster node).
    pub async fn from_manager(mut con: redis::aio::ConnectionManager) -> Result<Self> {
        refuse_cluster_node(info_cluster().query_async(&mut con).await?)?;
        Ok(Self::single(Link::Manager(con)))
    }

    /// Wraps a `MultiplexedConnection` of one server (refused for a cluster
    /// node). It does not reconnect after the server restarts; prefer
    /// [`AsyncConnection::open`] or a `ConnectionManager`.
    pub async fn from_multiplexed(mut con: redis::aio::MultiplexedConnection) -> Result<Self> {
        refuse_cluster_node(info_cluster().query_async(&mut con).await?)?;
        Ok(Self::single(Link::Multiplexed(con)))
    }

    /// Wraps redis-rs's async cluster connection.
    #[cfg(feature = "cluster")]
    pub fn from_cluster(router: redis::cluster_async::ClusterConnection) -> Self {
        Self {
            link: Link::Cluster {
                router,
                slots: Arc::new(Mutex::new(SlotMap::default())),
            },
            env: Env {
                cluster: true,
                ..Env::default()
            },
        }
    }

    fn single(link: Link) -> Self {
        Self {
            link,
            env: Env {
                cluster: false,
                ..Env::default()
            },
        }
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

    /// Runs one plain command (routed by its key on a cluster) — for what
    /// the patterns do not cover. Error replies are returned as errors.
    pub async fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        let reply = self.send_routed(cmd, None).await?;
        super::op::decode(None, reply)
    }

    /// The async driver: runs `op` to completion.
    pub(crate) async fn execute<T: Send + 'static>(&mut self, mut op: Op<T>) -> Result<T> {
        let env = self.env;
        let mut replies = None;
        loop {
            let step = op.step(&env, replies.take())?;
            match step {
                Step::Done(v) => return Ok(v),
                Step::Sleep(d) => {
                    tokio::time::sleep(d).await;
                    replies = Some(Replies::default());
                }
                Step::Send(batch) => replies = Some(self.exchange(batch).await?),
            }
        }
    }

    async fn exchange(&mut self, mut batch: Batch) -> Result<Replies> {
        if let Some(e) = batch.take_refused() {
            return Err(e);
        }
        if batch.is_empty() {
            return Ok(Replies::default());
        }
        let (groups, routed) = self.partition(&batch).await?;
        let mut ex = Exchange::new(batch, groups, self.env.cluster).call_mode(self.env.call_mode);
        ex.route_keyless(routed);
        loop {
            let parts = ex.round()?;
            if parts.is_empty() {
                break;
            }
            let replies = self.send_parts(&parts).await?;
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
            let cmd = cmd.clone();
            let reply = match ex.slot_node(i) {
                Some(slot) => self.send_to_slot_node(cmd, slot).await?,
                None => self.send_routed(&cmd, script).await?,
            };
            ex.file(i, reply);
        }
        ex.finish()
    }

    async fn partition(&mut self, batch: &Batch) -> Result<(Groups, Vec<usize>)> {
        match &mut self.link {
            Link::Manager(_) | Link::Multiplexed(_) => {
                Ok((vec![(Target::Server, (0..batch.len()).collect())], vec![]))
            }
            #[cfg(feature = "cluster")]
            Link::Cluster { router, slots } => {
                if batch.len() == 1 {
                    return Ok((Vec::new(), vec![0]));
                }
                let known = slots.lock().expect("slot map lock").clone();
                let map = if known.is_empty() {
                    let reply = router
                        .route_command(
                            SlotMap::cmd(),
                            redis::cluster_routing::RoutingInfo::SingleNode(
                                redis::cluster_routing::SingleNodeRoutingInfo::Random,
                            ),
                        )
                        .await?;
                    let map = SlotMap::parse(reply)?;
                    *slots.lock().expect("slot map lock") = map.clone();
                    map
                } else {
                    known
                };
                Ok(map.partition(&batch.slots()))
            }
        }
    }

    fn forget_slots(&mut self) {
        #[cfg(feature = "cluster")]
        if let Link::Cluster { slots, .. } = &self.link {
            *slots.lock().expect("slot map lock") = SlotMap::default();
        }
    }

    /// Sends one round: every part at once.
    async fn send_parts(&mut self, parts: &[Part]) -> Result<Vec<Vec<Value>>> {
        match &mut self.link {
            Link::Manager(con) => Ok(vec![parts[0].pipe.query_async(con).await?]),
            Link::Multiplexed(con) => Ok(vec![parts[0].pipe.query_async(con).await?]),
            #[cfg(feature = "cluster")]
            Link::Cluster { router, .. } => {
                use redis::cluster_routing::{Route, SingleNodeRoutingInfo, SlotAddr};
                let sends = parts.iter().map(|part| {
                    let Target::Node { slot, .. } = part.target else {
                        unreachable!("cluster batches are split by node")
                    };
                    let mut router = router.clone();
                    let pipe = part.pipe.clone();
                    let n = part.len();
                    async move {
                        router
                            .route_pipeline(
                                pipe,
                                0,
                                n,
                                SingleNodeRoutingInfo::SpecificNode(Route::new(
                                    slot,
                                    SlotAddr::Master,
                                )),
                            )
                            .await
                    }
                });
                join_all(sends.collect())
                    .await
                    .into_iter()
                    .map(|r| r.map_err(Error::from))
                    .collect()
            }
        }
    }

    /// One command on its own (routed on a cluster), reloading its script
    /// once on `NOSCRIPT`; error replies come back as `Value::ServerError`.
    async fn send_routed(
        &mut self,
        cmd: &Cmd,
        script: Option<&'static ScriptInfo>,
    ) -> Result<Value> {
        let reply = self.send_one(cmd).await?;
        match (&reply, script) {
            (reply, Some(s)) if self.env.call_mode.not_loaded(reply) => {
                let mode = self.env.call_mode;
                let loaded = self.send_one(&mode.load_cmd(s)).await?;
                mode.check_loaded(s, loaded)?;
                self.send_one(cmd).await
            }
            _ => Ok(reply),
        }
    }

    /// Sends a keyless command to the primary that serves `slot` (the one
    /// server when there is no cluster).
    async fn send_to_slot_node(&mut self, cmd: Cmd, slot: u16) -> Result<Value> {
        match &mut self.link {
            Link::Manager(_) | Link::Multiplexed(_) => self.send_one(&cmd).await,
            #[cfg(feature = "cluster")]
            Link::Cluster { router, .. } => {
                use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                let to = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
                reply_in_place(router.route_command(cmd, RoutingInfo::SingleNode(to)).await)
            }
        }
    }

    async fn send_one(&mut self, cmd: &Cmd) -> Result<Value> {
        let reply = match &mut self.link {
            Link::Manager(con) => con.req_packed_command(cmd).await,
            Link::Multiplexed(con) => con.req_packed_command(cmd).await,
            #[cfg(feature = "cluster")]
            Link::Cluster { router, .. } => router.req_packed_command(cmd).await,
        };
        reply_in_place(reply)
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
