//! A server (AOF on, `appendfsync always`) and a cluster node are killed and
//! started again on the same port while every kind of connection of the
//! crate keeps calling: each connection recovers by itself (no caller
//! reconnects), every call returns its result or an error (no panic), and
//! the data matches what was acknowledged: every acknowledged visit is
//! there, an increment with a request id applied exactly once per
//! acknowledged call, and one without applied at least once per
//! acknowledged call and at most once more per call whose outcome was
//! unknown.

#[path = "support/kinds.rs"]
mod kinds;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use redis_patterns::core::RequestId;
use redis_patterns::sharded_hash::ShardedHash;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{AsyncConnection, Connection, ErrorKind};
use support::Driver;

/// What one client saw.
#[derive(Default, Debug)]
struct Tally {
    calls: usize,
    visits_ok: Vec<i64>,
    once_ok: i64,
    once_failed: i64,
    plain_ok: i64,
    plain_unknown: i64,
    plain_failed: i64,
    failures: Vec<String>,
    /// Calls that succeeded after the restart.
    ok_after: usize,
}

const AOF: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2100, 1, 1).unwrap()
}

fn counter(name: &str) -> VisitCounter<chrono::Utc> {
    VisitCounter::builder(name, chrono::Utc, 8)
        .retention(redis_patterns::Retention::Forever)
        .build()
        .unwrap()
}

/// Calls until `stop`: a visit (idempotent), an increment with a request
/// id (idempotent) and one without, in turn; counts what came back.
fn client(
    mut d: Driver,
    name: String,
    stop: Arc<AtomicBool>,
    restarted: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
) -> Tally {
    let visits = counter(&name);
    let hash = ShardedHash::new(&format!("{name}:h"), 16).unwrap();
    let mut t = Tally::default();
    let mut member = 0i64;
    while !stop.load(Ordering::SeqCst) {
        let after = restarted.load(Ordering::SeqCst);
        let ok = match t.calls % 3 {
            0 => {
                member += 1;
                let r = d.run(visits.add(day(), member));
                if r.is_ok() {
                    t.visits_ok.push(member);
                }
                r.map(|_| ())
            }
            1 => {
                let r = d.run(hash.incr_once("once", 1, &RequestId::random()));
                match &r {
                    Ok(_) => t.once_ok += 1,
                    Err(_) => t.once_failed += 1,
                }
                r.map(|_| ())
            }
            _ => {
                let r = d.run(hash.incr("plain", 1));
                match &r {
                    Ok(_) => t.plain_ok += 1,
                    Err(e) if matches!(e.kind(), ErrorKind::OutcomeUnknown { .. }) => {
                        t.plain_unknown += 1
                    }
                    Err(_) => t.plain_failed += 1,
                }
                r.map(|_| ())
            }
        };
        t.calls += 1;
        match ok {
            Ok(()) if after => {
                t.ok_after += 1;
                if t.ok_after == 30 {
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }
            Ok(()) => {}
            Err(e) => t.failures.push(e.to_string()),
        }
    }
    t
}

/// Checks one client's data against its tally, read on `d`.
fn check(d: &mut Driver, name: &str, kind: &str, t: &Tally) {
    let visits = counter(name);
    let hash = ShardedHash::new(&format!("{name}:h"), 16).unwrap();
    let count = d.run(visits.count(day())).unwrap();
    let sizes: u64 = d.run(visits.shard_sizes(day())).unwrap().iter().sum();
    assert_eq!(count, sizes, "{kind}: the counter counts the members");
    for &m in &t.visits_ok {
        assert!(
            d.run(visits.contains(day(), m)).unwrap(),
            "{kind}: acknowledged visit {m} lost"
        );
    }
    let mut value = |f: &str| -> i64 {
        let key = hash.shard_key(f.as_bytes()).unwrap();
        d.cmd::<Option<i64>>(&key, redis::cmd("HGET").arg(&key).arg(f))
            .unwrap_or(0)
    };
    let once = value("once");
    assert!(
        t.once_ok <= once && once <= t.once_ok + t.once_failed,
        "{kind}: with request ids {once} applied, {} acknowledged, {} failed",
        t.once_ok,
        t.once_failed
    );
    let plain = value("plain");
    assert!(
        t.plain_ok <= plain && plain <= t.plain_ok + t.plain_unknown + t.plain_failed,
        "{kind}: {plain} applied, {} acknowledged, {} unknown, {} failed",
        t.plain_ok,
        t.plain_unknown,
        t.plain_failed
    );
    // Only a call that is not idempotent may end with an unknown outcome.
    assert_eq!(
        t.once_failed + t.plain_failed,
        0,
        "{kind}: {:?}",
        t.failures
    );
    println!(
        "{kind:>18} | {:>5} | {:>9} | {:>7} | {:>8} | {:>13} | {:>8} | {:>7}",
        t.calls,
        t.visits_ok.len(),
        t.once_ok,
        t.plain_ok,
        t.plain_unknown,
        t.failures.len(),
        t.ok_after
    );
}

/// Runs one client per driver in threads, restarts with `restart` once
/// every client made some calls, waits until each made 30 good calls after
/// it, and returns the tallies.
fn around_a_restart(drivers: Vec<Driver>, names: &[String], restart: impl FnOnce()) -> Vec<Tally> {
    let stop = Arc::new(AtomicBool::new(false));
    let restarted = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let n = drivers.len();
    let threads: Vec<_> = drivers
        .into_iter()
        .zip(names)
        .map(|(d, name)| {
            let (name, stop, restarted, done) =
                (name.clone(), stop.clone(), restarted.clone(), done.clone());
            std::thread::spawn(move || client(d, name, stop, restarted, done))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    restart();
    restarted.store(true, Ordering::SeqCst);
    let started = Instant::now();
    while done.load(Ordering::SeqCst) < n {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the clients did not recover"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    threads
        .into_iter()
        .map(|t| t.join().expect("no client panicked"))
        .collect()
}

fn header() {
    println!(
        "{:>18} | calls | visits ok | once ok | plain ok | plain unknown | failures | ok after restart",
        "connection"
    );
}

#[test]
fn every_connection_recovers_from_a_server_restart_with_aof() {
    let mut server = support::server_with(AOF);
    let url = server.url();
    let names: Vec<String> = kinds::KINDS
        .iter()
        .map(|k| format!("r:{}", k.replace(' ', "-")))
        .collect();
    let tallies = around_a_restart(kinds::every_kind(&url), &names, || {
        server.kill();
        std::thread::sleep(Duration::from_millis(300));
        server.resume().expect("restart the server");
    });
    header();
    let mut reader = Driver::Sync(Connection::open(url.as_str()).unwrap());
    for ((kind, name), t) in kinds::KINDS.iter().zip(&names).zip(&tallies) {
        check(&mut reader, name, kind, t);
    }
}

#[test]
fn cluster_connections_recover_from_a_node_restart_with_aof() {
    let mut cluster = redis_patterns_test_support::LocalCluster::builder()
        .args(AOF)
        .start()
        .expect("cluster");
    let url = cluster.nodes()[0].url();
    let drivers = support::drivers(&url);
    // Names whose keys live on several nodes, the restarted one among them.
    let names: Vec<String> = ["cluster sync", "cluster async"]
        .iter()
        .map(|k| format!("c:{}", k.replace(' ', "-")))
        .collect();
    let tallies = around_a_restart(drivers, &names, || {
        let node = &mut cluster.nodes_mut()[1];
        node.kill();
        std::thread::sleep(Duration::from_millis(300));
        node.resume().expect("restart the node");
    });
    cluster
        .wait_ready(Duration::from_secs(60))
        .expect("the cluster is whole again");
    header();
    let mut reader = Driver::Sync(Connection::open(url.as_str()).unwrap());
    for ((kind, name), t) in ["cluster sync", "cluster async"]
        .iter()
        .zip(&names)
        .zip(&tallies)
    {
        check(&mut reader, name, kind, t);
    }
}

/// What one way of making a connection did after its server restarted.
struct Probe {
    kind: &'static str,
    /// The first call after the restart: how long it took, and its error.
    first: (Duration, Option<redis_patterns::Error>),
    /// How long until a call succeeded again (none within the probe).
    recovered: Option<Duration>,
}

/// Calls `SET` on `key` through `d` until one succeeds (at most 5 calls or
/// 30 s): what the first call did and when one succeeded.
fn probe(kind: &'static str, d: &mut Driver, key: &str) -> Probe {
    let started = Instant::now();
    let mut first = None;
    let mut recovered = None;
    for _ in 0..5 {
        let call = Instant::now();
        let set = redis::cmd("SET").arg(key).arg("after").clone();
        let r = d.run(redis_patterns::Op::<()>::cmd(key, set));
        let ok = r.is_ok();
        first.get_or_insert((call.elapsed(), r.err()));
        if ok {
            recovered = Some(started.elapsed());
            break;
        }
        if started.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    Probe {
        kind,
        first: first.expect("one call made"),
        recovered,
    }
}

fn print_probes(probes: &[Probe]) {
    println!(
        "{:<46} | {:>10} | {:<9} | first call after the restart",
        "connection", "recovered", "waited"
    );
    for p in probes {
        let first = match &p.first.1 {
            None => "ok".to_string(),
            Some(e) => e.to_string().chars().take(110).collect(),
        };
        println!(
            "{:<46} | {:>10} | {:>7.2} s | {first}",
            p.kind,
            p.recovered
                .map_or("no".to_string(), |d| format!("{:.2} s", d.as_secs_f64())),
            p.first.0.as_secs_f64()
        );
    }
}

/// A driver on an async connection, made by `connect` on the driver's own
/// runtime.
fn async_driver(
    connect: impl std::future::Future<Output = redis_patterns::Result<AsyncConnection>>,
) -> Driver {
    let rt = support::runtime();
    let con = rt.block_on(connect).unwrap();
    Driver::Async(con, rt)
}

/// Each way of making a connection to one server, the server restarted
/// (AOF off: the data does not matter): those that hold their client
/// (`Connection::open`, `AsyncConnection::open`, `from_manager`,
/// `from_multiplexed_with_client`) recover by themselves; those wrapped
/// without it (`Connection::from_redis`, `AsyncConnection::from_multiplexed`)
/// fail at once with `ConnectionLost`, which names the lost connection's
/// error and how to make one that reconnects, instead of retrying until
/// their deadline. The table says how long each call waited.
#[test]
fn every_way_of_making_a_connection_recovers_or_says_at_once_that_it_cannot() {
    let mut server = support::server();
    let url = server.url();
    let client = || redis::Client::open(url.as_str()).unwrap();
    let mut ways: Vec<(&'static str, bool, Driver)> = vec![
        (
            "Connection::open(url)",
            true,
            Driver::Sync(Connection::open(url.as_str()).unwrap()),
        ),
        (
            "Connection::from_redis(redis::Connection)",
            false,
            Driver::Sync(Connection::from_redis(client().get_connection().unwrap()).unwrap()),
        ),
        (
            "AsyncConnection::open(url)",
            true,
            async_driver(AsyncConnection::open(url.as_str())),
        ),
        (
            "AsyncConnection::from_manager(manager)",
            true,
            async_driver(async {
                AsyncConnection::from_manager(client().get_connection_manager().await?).await
            }),
        ),
        (
            "AsyncConnection::from_multiplexed(mux)",
            false,
            async_driver(async {
                AsyncConnection::from_multiplexed(
                    client().get_multiplexed_async_connection().await?,
                )
                .await
            }),
        ),
        (
            "AsyncConnection::from_multiplexed_with_client",
            true,
            async_driver(async {
                let c = client();
                let m = c.get_multiplexed_async_connection().await?;
                AsyncConnection::from_multiplexed_with_client(c, m).await
            }),
        ),
    ];
    for (kind, _, d) in &mut ways {
        let set = redis::cmd("SET").arg("probe").arg("before").clone();
        d.run(redis_patterns::Op::<()>::cmd("probe", set))
            .unwrap_or_else(|e| panic!("{kind} before the restart: {e}"));
    }
    server.kill();
    std::thread::sleep(Duration::from_millis(300));
    server.resume().expect("restart the server");
    let probes: Vec<Probe> = ways
        .iter_mut()
        .map(|(kind, _, d)| probe(kind, d, "probe"))
        .collect();
    println!();
    print_probes(&probes);
    for ((_, reconnects, _), p) in ways.iter().zip(&probes) {
        if *reconnects {
            assert!(p.recovered.is_some(), "{} recovers by itself", p.kind);
            continue;
        }
        assert!(p.recovered.is_none(), "{} cannot reconnect", p.kind);
        // Every call fails with the reason and the way out, not retried.
        let (_, e) = &p.first;
        let e = e.as_ref().expect("it failed");
        assert!(
            matches!(e.kind(), ErrorKind::ConnectionLost { .. }) && !e.is_retryable(),
            "{}: {e}",
            p.kind
        );
        assert!(e.to_string().contains("Connection::open"), "{e}");
    }
}

/// Each way of making a connection to a cluster, the node that serves the
/// probed key restarted: every one recovers by itself — those the crate
/// opens (a node's URL, the nodes' URLs) and those wrapped around
/// redis-rs's cluster connections, which reconnect by their own client.
/// The table says how long each call waited (the probes run one after
/// another: the first one also waits for the node to answer again).
#[test]
fn every_way_of_making_a_cluster_connection_recovers_after_a_node_restart() {
    let mut cluster = support::cluster();
    let url = cluster.nodes()[0].url();
    let urls = cluster.urls();
    let key = "{probe}";
    let node = support::owner(&cluster, key);
    let mut ways: Vec<(&'static str, Driver)> = vec![
        (
            "Connection::open(node url)",
            Driver::Sync(Connection::open(url.as_str()).unwrap()),
        ),
        (
            "Connection::cluster(urls)",
            Driver::Sync(Connection::cluster(urls.clone()).unwrap()),
        ),
        (
            "Connection::from_cluster(ClusterConnection)",
            Driver::Sync(Connection::from_cluster(
                cluster.client().get_connection().unwrap(),
            )),
        ),
        (
            "AsyncConnection::open(node url)",
            async_driver(AsyncConnection::open(url.as_str())),
        ),
        (
            "AsyncConnection::cluster(urls)",
            async_driver(AsyncConnection::cluster(urls.clone())),
        ),
        (
            "AsyncConnection::from_cluster(cluster_async)",
            async_driver(async {
                Ok(AsyncConnection::from_cluster(
                    cluster.client().get_async_connection().await?,
                ))
            }),
        ),
    ];
    for (kind, d) in &mut ways {
        let set = redis::cmd("SET").arg(key).arg("before").clone();
        d.run(redis_patterns::Op::<()>::cmd(key, set))
            .unwrap_or_else(|e| panic!("{kind} before the restart: {e}"));
    }
    cluster.nodes_mut()[node].kill();
    std::thread::sleep(Duration::from_millis(300));
    cluster.nodes_mut()[node]
        .resume()
        .expect("restart the node");
    let probes: Vec<Probe> = ways
        .iter_mut()
        .map(|(kind, d)| probe(kind, d, key))
        .collect();
    println!();
    print_probes(&probes);
    for p in &probes {
        assert!(p.recovered.is_some(), "{} recovers by itself", p.kind);
    }
}
