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
//! The driver only does the I/O: the op's steps, what to send again, when,
//! and what fails are decided once for both drivers by the run
//! ([`drive`](super::drive)) and the exchange ([`Batch`] and
//! [`RetryPolicy`]); where each command goes by [`nodes`](super::nodes). A
//! connection that broke is dropped and opened again on its next use;
//! clones share the connections, so one reconnect serves all.
//!
//! A [`Step::Wait`](super::Step::Wait) registers with a hub of subscription connections shared
//! by the connection's clones (see [`subscriber_async`](super::subscriber_async)).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use redis::aio::ConnectionLike as _;
use redis::{Cmd, ConnectionInfo, IntoConnectionInfo, Value};

use super::batch::Batch;
use super::call_mode::CallMode;
#[cfg(feature = "cluster")]
use super::cluster::{Ask, ClusterState, Lookup, SlotRead, route};
use super::drive::{Input, Io, Run};
use super::durability::Durability;
use super::exchange::{Addr, Outcome, Part, Refresh, Routed, Target, failed, not_sent};
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
use super::subscriber_async::{Hub, Waits};
use super::undo::{Runner, Undo};
use super::wait_stats::WaitStats;
use crate::error::{Error, Result};
use crate::keys::cluster_slot;

/// An async connection to one server or to a Redis Cluster; runs every
/// operation of the crate (`op.run_async(&con).await`), retrying by its
/// [`RetryPolicy`] and waiting for replicas by its [`Durability`]. Clones
/// share the underlying connections (commands of concurrent tasks are
/// multiplexed); each clone has its own policy and durability, copied from
/// the original.
#[derive(Clone)]
pub struct AsyncConnection {
    link: Link,
    settings: Settings,
    /// How to reach the server (or, with another address, each cluster
    /// node), for the subscriptions of waits; `None` for a wrapped
    /// connection without its client, whose waits only sleep.
    info: Option<Arc<ConnectionInfo>>,
    /// The subscription connections, shared by the clones.
    hub: Arc<Hub>,
    /// What the server can do, once the first op of any clone detected it
    /// (a handle's own [`set_caps`](AsyncConnection::set_caps) comes first).
    detected: Arc<std::sync::OnceLock<super::caps::Caps>>,
}

impl std::fmt::Debug for AsyncConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.settings.debug(f, "AsyncConnection")
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
    /// How the connection broke, for the error of one that cannot reconnect.
    lost: Mutex<Option<String>>,
}

/// A cluster: its state, shared by the clones behind one lock (never held
/// across an `.await`), and the I/O it asks for.
#[cfg(feature = "cluster")]
struct ClusterLink {
    state: Mutex<AsyncState>,
    /// Whether it reaches nodes itself (seeds of its own), fixed at birth.
    own: bool,
}

#[cfg(feature = "cluster")]
type AsyncState =
    ClusterState<redis::aio::MultiplexedConnection, redis::cluster_async::ClusterConnection>;

#[cfg(feature = "cluster")]
impl ClusterLink {
    /// A link that opens connections of its own from `own`, or (`None`)
    /// one that sends everything through `router`.
    fn new(router: redis::cluster_async::ClusterConnection, own: Option<Seeds>) -> Self {
        Self {
            own: own.is_some(),
            state: Mutex::new(ClusterState::new(router, own)),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, AsyncState> {
        self.state.lock().expect("cluster state lock")
    }
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
    /// Connects to `url`; on a Redis Cluster node, to its cluster (see
    /// [`Connection::open`](crate::Connection::open), `rediss://` too).
    pub async fn open(url: impl IntoConnectionInfo) -> Result<Self> {
        Self::open_with(url.into_connection_info()?, Tls::default()).await
    }

    /// Connects to a `rediss://` URL with these certificates (see
    /// [`Connection::open_tls`](crate::Connection::open_tls)).
    #[cfg(feature = "tls")]
    pub async fn open_tls(
        url: impl IntoConnectionInfo,
        certs: redis::TlsCertificates,
    ) -> Result<Self> {
        Self::open_with(url.into_connection_info()?, Tls::with(certs)).await
    }

    async fn open_with(info: ConnectionInfo, tls: Tls) -> Result<Self> {
        let client = tls.client(info)?;
        let info = client.get_connection_info().clone();
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
            return Self::cluster_with([info], tls).await;
            #[cfg(not(feature = "cluster"))]
            return Err(cluster_feature_needed());
        }
        Ok(Self::with_link(Link::Manager(manager), Some(info)))
    }

    /// Connects to the Redis Cluster these nodes (any of them) belong to.
    #[cfg(feature = "cluster")]
    pub async fn cluster<T: IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
    ) -> Result<Self> {
        Self::cluster_with(nodes, Tls::default()).await
    }

    #[cfg(feature = "cluster")]
    async fn cluster_with<T: IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
        tls: Tls,
    ) -> Result<Self> {
        let seeds = Seeds::of(nodes, tls)?;
        let router = cluster_client(seeds.seeds.clone(), &seeds.tls)?
            .get_async_connection()
            .await?;
        let base = seeds.base.clone();
        let link = ClusterLink::new(router, Some(seeds));
        Ok(Self::with_link(Link::Cluster(Arc::new(link)), Some(base)))
    }

    fn with_link(link: Link, info: Option<ConnectionInfo>) -> Self {
        #[cfg(feature = "cluster")]
        let cluster = matches!(link, Link::Cluster(_));
        #[cfg(not(feature = "cluster"))]
        let cluster = false;
        let mut con = Self {
            link,
            settings: Settings::new(cluster),
            info: info.map(Arc::new),
            hub: Arc::default(),
            detected: Arc::default(),
        };
        con.settings.per_node = con.sends_per_node();
        con
    }

    /// Wraps a `ConnectionManager` of one server (refused for a cluster
    /// node). It reconnects by its own settings; each call is retried by
    /// this connection's policy.
    pub async fn from_manager(mut con: redis::aio::ConnectionManager) -> Result<Self> {
        let reply: Value = info_cluster().query_async(&mut con).await?;
        refuse_cluster_node(&reply, "AsyncConnection")?;
        Ok(Self::with_link(Link::Manager(con), None))
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
        let reply: Value = info_cluster().query_async(&mut con).await?;
        refuse_cluster_node(&reply, "AsyncConnection")?;
        let info = client.as_ref().map(|c| c.get_connection_info().clone());
        let mux = Mux {
            client,
            con: Mutex::new((Some(con), 0)),
            lost: Mutex::new(None),
        };
        Ok(Self::with_link(Link::Multiplexed(Arc::new(mux)), info))
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
            Link::Cluster(Arc::new(ClusterLink::new(router, None))),
            None,
        )
    }

    driver_settings!(
        "AsyncConnection",
        " (this handle only: clones made before keep their mode)",
        " (this clone)"
    );

    /// What the waits of the operations of this connection and its clones
    /// met (lock, semaphore and read-write lock waits): how many a message
    /// woke, and how many could not subscribe and slept out their timeout,
    /// with the server's refusal ([`WaitStats`]).
    pub fn wait_stats(&self) -> WaitStats {
        self.hub.wait_stats()
    }

    /// Whether it sends each node's commands itself (not a wrapped
    /// `ClusterConnection`), so that a `WAIT` can follow them.
    fn sends_per_node(&self) -> bool {
        match &self.link {
            Link::Manager(_) | Link::Multiplexed(_) => true,
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.own,
        }
    }

    /// Runs one plain command (routed by its key on a cluster) — for what
    /// the patterns do not cover. Error replies are returned as errors. It
    /// is retried like a batch's command (see
    /// [`Connection::query`](crate::Connection::query)).
    pub async fn query<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        let mut batch = Batch::new();
        batch.add_keyless(cmd.clone());
        self.execute(Op::send(batch, Ok)).await?.take()
    }

    /// The async driver: runs `op` to completion (the I/O of a [`Run`]).
    /// The subscriptions its waits made are dropped with `waits` when it
    /// returns, or when its future is dropped; so are the undo ops of an
    /// op dropped unfinished, which run in a spawned task ([`Undo`]).
    pub(crate) async fn execute<T: Send + 'static>(&self, op: Op<T>) -> Result<T> {
        let mut settings = self.settings;
        if settings.env.caps.is_none() {
            settings.env.caps = self.detected.get().copied();
        }
        let mut run = Run::new(op, settings);
        let mut undo = Undo::default();
        let result = self.drive_run(&mut run, &mut undo).await;
        undo.disarm();
        if let (None, Some(caps)) = (self.settings.env.caps, run.caps()) {
            let _ = self.detected.set(caps);
        }
        result
    }

    /// What the server can do as detected by the first op of this handle
    /// or a clone (for the `caps` accessor).
    fn detected_caps(&self) -> Option<super::caps::Caps> {
        self.detected.get().copied()
    }

    async fn drive_run<T: Send + 'static>(&self, run: &mut Run<T>, undo: &mut Undo) -> Result<T> {
        let mut input = Input::Start;
        let mut waits = Waits::default();
        loop {
            let io = run.next_undoable(input, undo.sink())?;
            undo.arm(|| undo_runner(self.clone()));
            input = match io {
                Io::Done(v) => return Ok(v),
                Io::Sleep(d) => {
                    tokio::time::sleep(d).await;
                    Input::Slept
                }
                Io::Wait { channel, timeout } => {
                    Input::Woken(self.wait(&channel, timeout, &mut waits).await)
                }
                Io::Route(refresh, slots) => Input::Targets(self.targets(refresh, &slots).await),
                Io::Send(parts) => Input::Sent(self.send_parts(parts).await),
            };
        }
    }

    /// One wait for a message on `channel`, through the hub, on the node
    /// that serves the channel's slot; a plain sleep for a connection that
    /// cannot open one.
    async fn wait(&self, channel: &[u8], timeout: Duration, waits: &mut Waits) -> bool {
        let Some((node, info)) = self.wait_target(cluster_slot(channel)).await else {
            self.hub.sleep(timeout).await;
            return false;
        };
        let hub = Arc::clone(&self.hub);
        let (woken, refused) = hub.wait(node, &info, channel, timeout, waits).await;
        if refused {
            #[cfg(feature = "cluster")]
            if let Link::Cluster(c) = &self.link {
                c.state().forget_map();
            }
        }
        woken
    }

    /// The node that serves `slot` and how to connect to it.
    async fn wait_target(&self, slot: u16) -> Option<(Addr, ConnectionInfo)> {
        let info = self.info.clone()?;
        match &self.link {
            Link::Manager(_) | Link::Multiplexed(_) => {
                let _ = slot;
                Some((node_key(&info), (*info).clone()))
            }
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => {
                let _ = info;
                let lookup = c.state().wait_target(slot);
                match lookup {
                    Lookup::Found(target) => target,
                    Lookup::ReadMap => {
                        let map = c.read_slots().await.ok()?;
                        c.state().serving(&map, slot)
                    }
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
                let lost = self.lost.lock().expect("connection lock").clone();
                return Outcome::Gone(cannot_reconnect(lost.as_deref()));
            }
        };
        match part.pipe.query_async::<Vec<Value>>(&mut con).await {
            Ok(v) => Outcome::Replies(v),
            Err(e) => {
                if e.is_unrecoverable_error() {
                    let mut slot = self.con.lock().expect("connection lock");
                    if slot.1 == generation {
                        slot.0 = None;
                        *self.lost.lock().expect("connection lock") = Some(e.to_string());
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
        let lookup = self.state().targets(refresh, slots);
        match lookup {
            Lookup::Found(targets) => Ok(targets),
            Lookup::ReadMap => Ok(route(&self.read_slots().await?, slots)),
        }
    }

    /// Reads the slot map from the first known node that answers.
    async fn read_slots(&self) -> Result<SlotMap> {
        let mut read = SlotRead::new(&*self.state());
        let mut reply = None;
        loop {
            let ask = read.step(&mut self.state(), reply.take());
            match ask {
                Ask::Done(map) => return map,
                Ask::Node(addr) => {
                    reply = Some(match self.node(&addr).await {
                        Ok(mut con) => SlotMap::cmd()
                            .query_async::<Value>(&mut con)
                            .await
                            .map_err(Error::from),
                        Err(e) => Err(e),
                    });
                }
            }
        }
    }

    async fn node(&self, addr: &Addr) -> Result<redis::aio::MultiplexedConnection> {
        let info = {
            let mut state = self.state();
            if let Some(con) = state.node(addr) {
                return Ok(con.clone());
            }
            state.node_info(addr)
        };
        let con = multiplexed(&redis::Client::open(info)?).await?;
        self.state().keep_node(addr, con.clone());
        Ok(con)
    }

    async fn router(&self) -> Result<redis::cluster_async::ClusterConnection> {
        let client = {
            let mut state = self.state();
            if let Some(r) = state.router() {
                return Ok(r.clone());
            }
            state.router_client()?
        };
        let router = client.get_async_connection().await?;
        self.state().keep_router(router.clone());
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
                        self.state().drop_node(addr);
                        failed(Vec::new(), e)
                    }
                }
            }
            _ => {
                let mut router = match self.router().await {
                    Ok(r) => r,
                    // A wrapped router that broke is not rebuilt: say so at once.
                    Err(e) if matches!(e.kind(), crate::ErrorKind::ConnectionLost { .. }) => {
                        return Outcome::Gone(e);
                    }
                    Err(e) => return not_sent(e),
                };
                let mut routed = Routed::new(pipe.len());
                for (cmd, route) in pipe.cmd_iter().zip(routes) {
                    let reply = match route {
                        Some(slot) => router.route_command(cmd.clone(), to_slot_node(*slot)).await,
                        None => router.req_packed_command(cmd).await,
                    };
                    let Some(outcome) = routed.file(reply) else {
                        continue;
                    };
                    if matches!(outcome, Outcome::Failed { .. }) {
                        self.state().router_failed();
                    }
                    return outcome;
                }
                Routed::empty()
            }
        }
    }
}

/// Runs the undo ops of a run dropped unfinished in a spawned task on
/// `con`, errors ignored; without a tokio runtime they are not run.
fn undo_runner(con: AsyncConnection) -> Runner {
    Box::new(move |undo: Op<()>| {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = con.execute(undo).await;
        });
    })
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
