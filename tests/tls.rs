//! TLS (the `tls` feature): the lock, visits and rate-limit patterns over
//! `rediss://` on one server and on a Redis Cluster whose bus and
//! replication use TLS too, through both drivers, each server's certificate
//! signed by a throwaway CA ([`TlsFiles`], made with `openssl`) that the
//! connection is given with `open_tls`; and no connection accepts a
//! certificate it cannot verify.
//!
//! It needs a server built with TLS: Debian's `redis-server` is; the PyPI
//! builds of Redis 8.2 and Valkey are not, and `.ci/run` sets
//! `REDIS_PATTERNS_SKIP_TLS=1` for them and for the functions-mode pass
//! (TLS is the transport, the same in either call mode), so that the TLS
//! tests run once per CI run. Anywhere else a server without TLS fails
//! here, saying so.
#![cfg(feature = "tls")]

mod support;

use std::time::Duration;

use redis_patterns::chrono::Utc;
use redis_patterns::lock::Lock;
use redis_patterns::rate_limit::{Limit, RateLimiter};
use redis_patterns::redis::TlsCertificates;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{AsyncConnection, Connection};
use redis_patterns_test_support::{LocalCluster, LocalServer, TlsFiles};
use support::Driver;

/// Fresh test certificates, or `None` when the TLS tests are skipped
/// (`REDIS_PATTERNS_SKIP_TLS` set).
fn files() -> Option<TlsFiles> {
    if std::env::var_os("REDIS_PATTERNS_SKIP_TLS").is_some() {
        eprintln!("TLS tests skipped (REDIS_PATTERNS_SKIP_TLS is set)");
        return None;
    }
    Some(TlsFiles::generate().unwrap_or_else(|e| panic!("cannot make the test certificates: {e}")))
}

const NO_TLS: &str = "a server built without TLS: use one that has it (Debian's redis-server), or set REDIS_PATTERNS_SKIP_TLS=1";

/// Fresh test certificates, a server with a TLS port whose certificate
/// their CA signed, and that port's URL (`None` when the TLS tests are
/// skipped).
fn tls_server() -> Option<(TlsFiles, LocalServer, String)> {
    let files = files()?;
    let server = LocalServer::start_tls(&files, &[]).unwrap_or_else(|e| panic!("{NO_TLS}: {e}"));
    let url = server.tls_url().expect("a TLS port");
    Some((files, server, url))
}

/// The test CA as a connection's root certificate.
fn certs(files: &TlsFiles) -> TlsCertificates {
    TlsCertificates {
        client_tls: None,
        root_cert: Some(files.ca_pem()),
    }
}

/// Both drivers over TLS to `url`, verified against `files`' CA.
fn tls_drivers(url: &str, files: &TlsFiles) -> Vec<Driver> {
    let sync = Connection::open_tls(url, certs(files))
        .expect("sync TLS connection")
        .with_call_mode(support::call_mode());
    let rt = support::runtime();
    let asy = rt
        .block_on(AsyncConnection::open_tls(url, certs(files)))
        .expect("async TLS connection")
        .with_call_mode(support::call_mode());
    vec![Driver::Sync(sync), Driver::Async(asy, rt)]
}

/// Locks, visits and rate limits over `d`, for the names of `tag` (several
/// names: on a cluster their keys live on different nodes).
fn tour(d: &mut Driver, tag: &str) {
    for i in 0..4 {
        let lock = Lock::new(&format!("tls-{tag}-{i}"), Duration::from_secs(30)).unwrap();
        let lease = d.run(lock.try_acquire()).expect("acquire over TLS");
        assert!(d.run(lock.try_acquire()).is_err(), "held");
        assert_eq!(d.run(lock.release(&lease.token)).unwrap(), Some(true));
    }
    let day = Utc::now().date_naive();
    let visits = VisitCounter::new(&format!("tls-{tag}"), Utc, 8).unwrap();
    let members: Vec<i64> = (1..=200).collect();
    d.run(visits.add_batch(day, &members))
        .expect("add_batch over TLS");
    d.run(visits.add(day, 7)).unwrap();
    assert_eq!(d.run(visits.count(day)).unwrap(), 200);
    let limiter = RateLimiter::new(Limit::sliding_counter(3, Duration::from_secs(60))).unwrap();
    let subject = format!("tls-{tag}");
    let allowed: Vec<bool> = (0..5)
        .map(|_| d.run(limiter.throttle(&subject, 1)).unwrap().allowed())
        .collect();
    assert_eq!(allowed, [true, true, true, false, false]);
}

#[test]
fn the_patterns_run_over_tls_on_a_server() {
    let Some((files, server, url)) = tls_server() else {
        return;
    };
    for mut d in tls_drivers(&url, &files) {
        assert!(!d.is_cluster());
        let name = d.name();
        tour(&mut d, name);
    }
    // What they wrote is on the server (read over its plain port).
    assert!(support::dbsize(&mut server.connection()) > 0);
}

#[test]
fn the_patterns_run_over_tls_on_a_cluster() {
    let Some(files) = files() else {
        return;
    };
    let cluster = LocalCluster::builder()
        .tls(&files)
        .start()
        .unwrap_or_else(|e| panic!("{NO_TLS}: {e}"));
    let urls = cluster.tls_urls();
    assert_eq!(urls.len(), 3);
    for mut d in tls_drivers(&urls[0], &files) {
        assert!(d.is_cluster(), "a TLS node's url connects to its cluster");
        let name = d.name();
        tour(&mut d, name);
    }
    support::keys_spread(&cluster);
}

#[test]
fn a_certificate_that_cannot_be_verified_is_refused() {
    let Some((_files, _server, url)) = tls_server() else {
        return;
    };
    // Another CA than the one that signed the server's certificate.
    let other = self::files().expect("not skipped");
    let err = Connection::open_tls(url.as_str(), certs(&other)).unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    // The system's roots do not know the test CA either.
    assert!(Connection::open(url.as_str()).is_err());
    // `#insecure` (accept any certificate) is not built in.
    assert!(Connection::open(format!("{url}#insecure").as_str()).is_err());
    let rt = support::runtime();
    assert!(
        rt.block_on(AsyncConnection::open_tls(url.as_str(), certs(&other)))
            .is_err()
    );
}
