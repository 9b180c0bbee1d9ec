//! How both drivers find and reach servers: the crate's timeouts, cluster
//! detection (`INFO cluster`), a node's connection info and address, a
//! cluster's seeds and the nodes known since, and where each command of a
//! round goes by the slot map.

use std::time::Duration;

#[cfg(feature = "cluster")]
use redis::IntoConnectionInfo;
use redis::{Cmd, ConnectionAddr, ConnectionInfo, Value};

use super::batch::Addr;
#[cfg(feature = "cluster")]
use super::batch::Target;
#[cfg(feature = "cluster")]
use super::slots::SlotMap;
use crate::error::{Error, ErrorKind, Result};

/// How long connecting may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one reply may take (redis-rs's async default is 500 ms, which a
/// large batch or a busy machine exceeds).
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

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

/// Refuses to wrap a connection to a cluster node (its `INFO cluster`
/// reply is `info`): it could not follow keys to other nodes; `driver`
/// names the type whose `open` does.
pub(crate) fn refuse_cluster_node(info: &Value, driver: &str) -> Result<()> {
    if cluster_enabled(info) {
        return Err(Error::invalid(
            "connection",
            format!(
                "talks to a Redis Cluster node and cannot follow keys to other nodes: open its url with {driver}::open"
            ),
        ));
    }
    Ok(())
}

/// The error of a connection that broke (`cause`: how, when known) and
/// was handed over without its client.
pub(crate) fn cannot_reconnect(cause: Option<&str>) -> Error {
    ErrorKind::ConnectionLost {
        cause: cause.unwrap_or("an earlier call failed").to_string(),
    }
    .into()
}

/// `base` with another host and port (same credentials and TLS settings):
/// how to reach another node of the cluster `base` reaches.
pub fn node_info(base: &ConnectionInfo, host: &str, port: u16) -> ConnectionInfo {
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

/// The node key of a single server (its address; a Unix socket's path).
pub(crate) fn node_key(info: &ConnectionInfo) -> Addr {
    addr_of(info).unwrap_or_else(|| (info.addr().to_string(), 0))
}

/// The TLS certificates a connection was opened with
/// (`Connection::open_tls`): a private CA, a client certificate. A
/// single server's client carries them in its connection info; a cluster
/// client needs them besides the nodes' URLs. Empty without the `tls`
/// feature, and for `rediss://` URLs opened with `open` (the system's
/// roots).
#[derive(Clone, Default)]
pub(crate) struct Tls {
    #[cfg(feature = "tls")]
    pub(crate) certs: Option<redis::TlsCertificates>,
}

impl Tls {
    /// With these certificates.
    #[cfg(feature = "tls")]
    pub(crate) fn with(certs: redis::TlsCertificates) -> Self {
        Self { certs: Some(certs) }
    }

    /// A client for `info`, with the certificates when there are some (a
    /// plain `redis://` URL with certificates is refused).
    pub(crate) fn client(&self, info: ConnectionInfo) -> Result<redis::Client> {
        #[cfg(feature = "tls")]
        if let Some(certs) = &self.certs {
            return Ok(redis::Client::build_with_tls(info, certs.clone())?);
        }
        Ok(redis::Client::open(info)?)
    }

    #[cfg(feature = "cluster")]
    fn apply(
        &self,
        builder: redis::cluster::ClusterClientBuilder,
    ) -> redis::cluster::ClusterClientBuilder {
        #[cfg(feature = "tls")]
        if let Some(certs) = &self.certs {
            return builder.certs(certs.clone());
        }
        builder
    }
}

#[cfg(feature = "cluster")]
/// The nodes a cluster connection starts from, the first of which says how
/// to reach every other (credentials, TLS), and its TLS certificates.
pub(crate) struct Seeds {
    pub(crate) seeds: Vec<ConnectionInfo>,
    pub(crate) base: ConnectionInfo,
    pub(crate) tls: Tls,
}

#[cfg(feature = "cluster")]
impl Seeds {
    /// The seeds of `nodes`: at least one; each carries `tls`'s
    /// certificates (so that a node reached from the first has them too).
    pub(crate) fn of<T: IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
        tls: Tls,
    ) -> Result<Self> {
        let seeds = nodes
            .into_iter()
            .map(|n| {
                Ok(tls
                    .client(n.into_connection_info()?)?
                    .get_connection_info()
                    .clone())
            })
            .collect::<Result<Vec<_>>>()?;
        let base = seeds
            .first()
            .cloned()
            .ok_or_else(|| Error::invalid("nodes", "must name at least one node"))?;
        Ok(Self { seeds, base, tls })
    }

    /// How to reach the node at `addr`.
    pub(crate) fn node(&self, addr: &Addr) -> ConnectionInfo {
        node_info(&self.base, &addr.0, addr.1)
    }

    /// A cluster client seeded with these seeds and every node known
    /// since (see [`cluster_client`]).
    pub(crate) fn client(&self, known: &Known) -> Result<redis::cluster::ClusterClient> {
        cluster_client(known.with_seeds(self), &self.tls)
    }
}

/// A cluster client with the crate's timeouts (connect 5 s, reply 30 s)
/// that never retries by itself (the exchange decides), seeded with `nodes`
/// and reaching them with `tls`'s certificates.
#[cfg(feature = "cluster")]
pub(crate) fn cluster_client<T: IntoConnectionInfo>(
    nodes: impl IntoIterator<Item = T>,
    tls: &Tls,
) -> Result<redis::cluster::ClusterClient> {
    let builder = redis::cluster::ClusterClient::builder(nodes)
        .connection_timeout(CONNECT_TIMEOUT)
        .response_timeout(RESPONSE_TIMEOUT)
        .retries(0);
    Ok(tls.apply(builder).build()?)
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

#[cfg(feature = "cluster")]
/// Every node seen (the seeds and the slot maps' nodes), in the order they
/// are asked for the slot map: the one that answered last comes first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Known(Vec<Addr>);

#[cfg(feature = "cluster")]
impl Known {
    /// The seeds' addresses (none without seeds).
    pub(crate) fn of(own: Option<&Seeds>) -> Self {
        let seeds = own.map_or(&[][..], |o| &o.seeds);
        Self(seeds.iter().filter_map(addr_of).collect())
    }

    /// The nodes to ask, in order.
    pub(crate) fn in_order(&self) -> Vec<Addr> {
        self.0.clone()
    }

    /// `addr` answered with `map`: it is asked first next time, and every
    /// node the map names is known from now on.
    pub(crate) fn answered(&mut self, addr: &Addr, map: &SlotMap) {
        if let Some(at) = self.0.iter().position(|a| a == addr) {
            self.0.rotate_left(at);
        }
        for a in map.all_nodes() {
            if !self.0.contains(a) {
                self.0.push(a.clone());
            }
        }
    }

    /// No node answered (`last` is the last failure): the next one is asked
    /// first next time; the error to return.
    pub(crate) fn none_answered(&mut self, last: Option<Error>) -> Error {
        if !self.0.is_empty() {
            self.0.rotate_left(1);
        }
        last.unwrap_or_else(|| Error::invalid("nodes", "no cluster node is known"))
    }

    /// The seeds of a cluster client: `own` seeds, then every node known
    /// since (same credentials as the first).
    pub(crate) fn with_seeds(&self, own: &Seeds) -> Vec<ConnectionInfo> {
        let mut out = own.seeds.clone();
        for addr in &self.0 {
            let info = own.node(addr);
            if !out.iter().any(|s| s.addr() == info.addr()) {
                out.push(info);
            }
        }
        out
    }
}

#[cfg(feature = "cluster")]
/// A node's `CLUSTER SLOTS` reply as a slot map; one that names no slot is
/// refused too.
pub(crate) fn read_map(reply: Result<Value>) -> Result<SlotMap> {
    match reply.and_then(SlotMap::parse) {
        Ok(map) if map.is_empty() => Err(Error::unexpected("CLUSTER SLOTS named no slot")),
        other => other,
    }
}

#[cfg(feature = "cluster")]
/// Whether the slot map must be read before `slots` can be routed.
pub(crate) fn needs_map(map: &SlotMap, slots: &[Option<u16>]) -> bool {
    map.is_empty() && slots.iter().any(Option::is_some)
}

#[cfg(feature = "cluster")]
/// Where each command goes by `map`: the primary of its slot, or the
/// router (no key, or a slot the map does not cover).
pub(crate) fn route(map: &SlotMap, slots: &[Option<u16>]) -> Vec<Target> {
    slots
        .iter()
        .map(|s| match s.and_then(|s| map.primary_of(s)) {
            Some(addr) => Target::Node(addr.clone()),
            None => Target::Router,
        })
        .collect()
}

#[cfg(feature = "cluster")]
/// The node that serves `slot` by `map`, and how to reach it from `base`.
pub(crate) fn serving(
    base: &ConnectionInfo,
    map: &SlotMap,
    slot: u16,
) -> Option<(Addr, ConnectionInfo)> {
    let (host, port) = map.primary_of(slot)?.clone();
    let info = node_info(base, &host, port);
    Some(((host, port), info))
}
