//! The async driver: [`AsyncConnection`], one cheaply cloned connection
//! type for one server or a Redis Cluster, which runs any [`Op`] on tokio.
//!
//! [`AsyncConnection::open`] asks the server once (`INFO cluster`); on one
//! server it uses redis-rs's `ConnectionManager` (which reconnects after the
//! server restarts), on a cluster node the async cluster connection. On a
//! cluster a batch goes out as one pipeline per node, all sent at once (one
//! round trip for the whole batch), routed by redis-rs to the node that
//! serves the group's slots.
//!
//! A [`Step::Wait`] registers with a hub of subscription connections shared
//! by the connection's clones (see [`subscriber_async`](super::subscriber_async)).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use redis::aio::ConnectionLike as _;
use redis::{Cmd, ConnectionInfo, IntoConnectionInfo, Value};

use super::batch::{Batch, Exchange, Groups, Part, Target, reply_in_place};
use super::conn::{cluster_enabled, info_cluster};
use super::op::{Env, Op, Replies, Step, wait_replies};
use super::slots::SlotMap;
use super::subscriber_async::{Hub, Waits};
use crate::error::{Error, Result};
use crate::keys::cluster_slot;
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
    /// How to reach the server (or, with another address, each cluster
    /// node), for the subscriptions of [`Step::Wait`]; `None` for a wrapped
    /// connection, whose waits only sleep.
    info: Option<Arc<ConnectionInfo>>,
    /// The subscription connections, shared by the clones.
    hub: Arc<Hub>,
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
        let mut con = Self::single(Link::Manager(manager));
        con.info = Some(Arc::new(info));
        Ok(con)
    }

    /// Connects to the Redis Cluster these nodes (any of them) belong to.
    #[cfg(feature = "cluster")]
    pub async fn cluster<T: IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
    ) -> Result<Self> {
        let infos = nodes
            .into_iter()
            .map(|n| n.into_connection_info())
            .collect::<redis::RedisResult<Vec<_>>>()?;
        let base = infos.first().cloned();
        let router = super::conn::cluster_client(infos)?
            .get_async_connection()
            .await?;
        let mut con = Self::from_cluster(router);
        con.info = base.map(Arc::new);
        Ok(con)
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
            env: Env { cluster: true },
            info: None,
            hub: Arc::default(),
        }
    }

    fn single(link: Link) -> Self {
        Self {
            link,
            env: Env { cluster: false },
            info: None,
            hub: Arc::default(),
        }
    }

    /// Whether this connection talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.env.cluster
    }

    /// Runs one plain command (routed by its key on a cluster) — for what
    /// the patterns do not cover. Error replies are returned as errors.
    pub async fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T> {
        let reply = self.send_routed(cmd, None, None).await?;
        super::op::decode(None, reply)
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
    /// channel's slot; a plain sleep for a wrapped connection.
    async fn wait(&mut self, channel: &[u8], timeout: Duration, waits: &mut Waits) -> bool {
        let Some((node, info)) = self.wait_target(cluster_slot(channel)).await else {
            tokio::time::sleep(timeout).await;
            return false;
        };
        let hub = Arc::clone(&self.hub);
        let (woken, refused) = hub.wait(node, &info, channel, timeout, waits).await;
        if refused {
            self.forget_slots();
        }
        woken
    }

    /// The node that serves `slot` and how to connect to it.
    async fn wait_target(&mut self, slot: u16) -> Option<((String, u16), ConnectionInfo)> {
        let info = self.info.clone()?;
        match &self.link {
            Link::Manager(_) | Link::Multiplexed(_) => {
                let _ = slot;
                Some((super::conn::node_key(&info), (*info).clone()))
            }
            #[cfg(feature = "cluster")]
            Link::Cluster { .. } => {
                let map = self.slot_map().await.ok()?;
                let (host, port) = map.addr(map.node_of(slot)?).clone();
                let node = super::conn::node_info(&info, &host, port);
                Some(((host, port), node))
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
        if batch.len() == 1 && !self.env.cluster {
            // One command: sent as it is, no pipeline around it.
            let e = batch.entries.pop().expect("one entry");
            let reply = self.send_routed(&e.cmd, e.script, e.slot).await?;
            return Ok(Replies::new(vec![reply], vec![e.script]));
        }
        let (groups, routed) = self.partition(&batch).await?;
        let mut ex = Exchange::new(batch, groups, self.env.cluster);
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
            let (cmd, script, slot) = ex.entry(i);
            let cmd = cmd.clone();
            let reply = self.send_routed(&cmd, script, slot).await?;
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
            Link::Cluster { .. } => {
                if batch.len() == 1 {
                    return Ok((Vec::new(), vec![0]));
                }
                let map = self.slot_map().await?;
                Ok(map.partition(&batch.slots()))
            }
        }
    }

    /// The cluster's slot map, read unless it is known.
    #[cfg(feature = "cluster")]
    async fn slot_map(&mut self) -> Result<SlotMap> {
        let Link::Cluster { router, slots } = &mut self.link else {
            return Ok(SlotMap::default());
        };
        let known = slots.lock().expect("slot map lock").clone();
        if !known.is_empty() {
            return Ok(known);
        }
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
        Ok(map)
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

    /// One command on its own (routed on a cluster: to the node of `slot`
    /// when given, so that a keyless command added with a key's slot, such
    /// as `WAIT`, goes there), reloading its script once on `NOSCRIPT`;
    /// error replies come back as `Value::ServerError`.
    async fn send_routed(
        &mut self,
        cmd: &Cmd,
        script: Option<&'static ScriptInfo>,
        slot: Option<u16>,
    ) -> Result<Value> {
        let reply = self.send_one(cmd, slot).await?;
        match (&reply, script) {
            (Value::ServerError(e), Some(s)) if e.code() == "NOSCRIPT" => {
                let loaded = self.send_one(&s.load_cmd(), slot).await?;
                if let Value::ServerError(e) = loaded {
                    return Err(Error::from_redis(Some(s), e.into()));
                }
                s.check_loaded(loaded)?;
                self.send_one(cmd, slot).await
            }
            _ => Ok(reply),
        }
    }

    async fn send_one(&mut self, cmd: &Cmd, slot: Option<u16>) -> Result<Value> {
        let reply = match &mut self.link {
            Link::Manager(con) => con.req_packed_command(cmd).await,
            Link::Multiplexed(con) => con.req_packed_command(cmd).await,
            #[cfg(feature = "cluster")]
            Link::Cluster { router, .. } => match slot {
                Some(slot) => {
                    router
                        .route_command(cmd.clone(), super::conn::slot_route(slot))
                        .await
                }
                None => router.req_packed_command(cmd).await,
            },
        };
        let _ = slot;
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
