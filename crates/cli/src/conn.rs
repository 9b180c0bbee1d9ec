//! The server a command talks to: `--url`, else `REDIS_URL`, else
//! [`DEFAULT_URL`], checked before connecting, and the connection to one server or, from any of its nodes,
//! to a whole Redis Cluster. A `rediss://` URL connects over TLS, verified
//! against the system's root certificates or the CA of `--tls-ca`; a URL
//! that asks to accept any certificate (`#insecure`) is refused.

use std::path::PathBuf;

use redis::{ConnectionInfo, TlsCertificates};
use redis_patterns::Connection;

use crate::fail::{self, CliResult, Failure};

/// The URL a command talks to when neither `--url` nor `REDIS_URL` names one.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379/";

/// The server to talk to.
#[derive(clap::Args, Debug, Clone)]
pub struct UrlArg {
    /// Redis URL, e.g. redis://host:6379/ or redis://:PASSWORD@host/ (on a
    /// Redis Cluster: any node; the cluster is detected) [default:
    /// redis://127.0.0.1:6379/]
    #[arg(long, env = "REDIS_URL", value_name = "URL")]
    url: Option<String>,
    /// For a rediss:// URL: the CA certificate (PEM) that signed the
    /// server's, instead of the system's root certificates.
    #[arg(long, env = "REDIS_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// For a rediss:// URL whose server asks for a client certificate: the
    /// certificate (PEM); needs --tls-key.
    #[arg(
        long,
        env = "REDIS_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(
        long,
        env = "REDIS_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
}

impl UrlArg {
    /// The URL: `--url`, else `REDIS_URL`, else [`DEFAULT_URL`].
    pub fn url(&self) -> &str {
        self.url.as_deref().unwrap_or(DEFAULT_URL)
    }

    /// Connects (see [`connect`]). When the default URL was used and no
    /// server answers there, the message says so and how to name another.
    pub fn connect(&self) -> CliResult<Connection> {
        let url = self.url();
        check(url)?;
        fail::set_url(url);
        match self.certs()? {
            None => Connection::open(url),
            Some(certs) => Connection::open_tls(url, certs),
        }
        .map_err(|e| {
            let unreachable = e.is_retryable();
            let failure = Failure::from(e);
            if self.url.is_some() || !unreachable {
                return failure;
            }
            Failure::new(format!(
                "{} (the default url, as neither --url nor REDIS_URL is set: name your server with --url URL or REDIS_URL=URL)",
                failure.message
            ))
        })
    }

    /// The URL's connection info, with the certificates of `--tls-ca`,
    /// `--tls-cert` and `--tls-key` when given (for connections of a
    /// command's own, e.g. to each node of a cluster).
    pub fn info(&self) -> CliResult<ConnectionInfo> {
        check(self.url())?;
        let info = redis::IntoConnectionInfo::into_connection_info(self.url())
            .map_err(|e| Failure::from(redis_patterns::Error::from(e)))?;
        let Some(certs) = self.certs()? else {
            return Ok(info);
        };
        let client = redis::Client::build_with_tls(info, certs)
            .map_err(|e| Failure::from(redis_patterns::Error::from(e)))?;
        Ok(client.get_connection_info().clone())
    }

    /// The certificates the options name; `None` without any. Refused for
    /// a URL that is not `rediss://`.
    fn certs(&self) -> CliResult<Option<TlsCertificates>> {
        if self.tls_ca.is_none() && self.tls_cert.is_none() {
            return Ok(None);
        }
        if !self.url().starts_with("rediss://") {
            return Err(Failure::new(
                "--tls-ca, --tls-cert and --tls-key need a rediss:// url (TLS)".to_string(),
            ));
        }
        let read = |p: &PathBuf, what: &str| {
            std::fs::read(p).map_err(|e| {
                Failure::new(format!(
                    "cannot read the {what} {}: {}",
                    p.display(),
                    fail::io_text(&e)
                ))
            })
        };
        let root_cert = self
            .tls_ca
            .as_ref()
            .map(|p| read(p, "CA certificate (--tls-ca)"))
            .transpose()?;
        let client_tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
                client_cert: read(cert, "client certificate (--tls-cert)")?,
                client_key: read(key, "client key (--tls-key)")?,
            }),
            _ => None,
        };
        Ok(Some(TlsCertificates {
            client_tls,
            root_cert,
        }))
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

/// Refuses a URL that does not parse, naming it and `REDIS_URL`, and one
/// that asks to accept any certificate.
pub fn check(url: &str) -> CliResult<()> {
    if url.starts_with("rediss://") && url.ends_with("#insecure") {
        return Err(Failure::new(format!(
            "the url {} asks to accept any certificate (#insecure), which redis-patterns never does: give the CA that signed the server's certificate with --tls-ca FILE",
            fail::mask(url)
        )));
    }
    redis::IntoConnectionInfo::into_connection_info(url)
        .map(drop)
        .map_err(|_| {
            Failure::new(format!(
                "the url {} (from --url or REDIS_URL) does not parse: write it as redis://[:PASSWORD@]HOST[:PORT][/DB] (rediss:// for TLS)",
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
