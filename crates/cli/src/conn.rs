//! The server a command talks to: `--url` (or `REDIS_URL`), checked before
//! connecting, and the connection to one server or, from any of its nodes,
//! to a whole Redis Cluster.

use redis_patterns::Connection;

use crate::fail::{self, CliResult, Failure};

/// The server to talk to.
#[derive(clap::Args, Debug, Clone)]
pub struct UrlArg {
    /// Redis URL, e.g. redis://127.0.0.1:6379/ or redis://:PASSWORD@host/ (on a
    /// Redis Cluster: any node; the cluster is detected).
    #[arg(long, env = "REDIS_URL")]
    pub url: String,
}

impl UrlArg {
    /// Connects (see [`connect`]).
    pub fn connect(&self) -> CliResult<Connection> {
        connect(&self.url)
    }
}

/// What a command builds from its pattern's arguments (its key prefix,
/// layout ...) before it connects.
pub trait Open {
    type Pattern;
    fn pattern(&self) -> CliResult<Self::Pattern>;
}

/// A pattern's arguments and the server: what most commands take.
#[derive(clap::Args, Debug, Clone)]
pub struct At<T: clap::Args> {
    #[command(flatten)]
    pub pattern: T,
    #[command(flatten)]
    pub url: UrlArg,
}

impl<T: clap::Args + Open> At<T> {
    /// The pattern (its arguments checked first), then the connection.
    pub fn open(&self) -> CliResult<(T::Pattern, Connection)> {
        let pattern = self.pattern.pattern()?;
        Ok((pattern, self.url.connect()?))
    }
}

/// Refuses a URL that does not parse, naming it and `REDIS_URL`.
pub fn check(url: &str) -> CliResult<()> {
    redis::IntoConnectionInfo::into_connection_info(url)
        .map(drop)
        .map_err(|_| {
            Failure::new(format!(
                "the url {} (from --url or REDIS_URL) does not parse: write it as redis://[:PASSWORD@]HOST[:PORT][/DB]",
                fail::mask(url)
            ))
        })
}

/// Connects to `url`: one server, or the cluster of a cluster node.
pub fn connect(url: &str) -> CliResult<Connection> {
    check(url)?;
    fail::set_url(url);
    Connection::open(url).map_err(Failure::from)
}
