//! How both drivers find and reach servers: the crate's timeouts, cluster
//! detection (`INFO cluster`), a node's connection info and address, a
//! cluster's seeds and its client (the cluster's state and routing:
//! [`cluster`](super::cluster)).

use std::time::Duration;

#[cfg(feature = "cluster")]
use redis::IntoConnectionInfo;
use redis::{Cmd, ConnectionAddr, ConnectionInfo, Value};

use super::exchange::Addr;
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

/// The error of a URL that names a cluster node, without the `cluster`
/// feature.
#[cfg(not(feature = "cluster"))]
pub(crate) fn cluster_feature_needed() -> Error {
    Error::invalid(
        "url",
        "names a Redis Cluster node: enable the crate's `cluster` feature",
    )
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
