//! `cargo bench --bench fanout`: a fan-out over many keys on a 3-node Redis
//! Cluster against one server holding the same data, same run, through both
//! drivers. Starts its own redis-server and cluster on loopback.
//!
//! Workloads: `HLEN` of 2,700 keys (a sharded hash's `len` over 2,700
//! shards) and `HMGET` of 1,000 fields spread over those keys (its
//! `get_many`). Environment: `BENCH_ROUNDS` (default 5), `BENCH_REPS`
//! fan-outs per round (default 20).

mod common;

use std::time::Instant;

use common::{Table, median, num};
use redis_patterns::{AsyncConnection, Batch, Connection, Request};
use redis_patterns_test_support::LocalCluster;

const SHARDS: usize = 2700;

fn shard(i: usize) -> String {
    format!("bench:hash:{i}")
}

fn hlen_batch() -> Batch {
    let mut b = Batch::with_capacity(SHARDS);
    for i in 0..SHARDS {
        let k = shard(i);
        b.add(&k, redis::cmd("HLEN").arg(&k).clone());
    }
    b
}

fn hmget_batch() -> Batch {
    // 1,000 fields over their shards: one HMGET per shard touched.
    let mut by_shard: Vec<Vec<String>> = vec![Vec::new(); SHARDS];
    for f in 0..1000usize {
        let field = format!("f{f}");
        by_shard[crc32fast::hash(field.as_bytes()) as usize % SHARDS].push(field);
    }
    let mut b = Batch::new();
    for (i, fields) in by_shard.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
        let k = shard(i);
        let mut c = redis::cmd("HMGET");
        c.arg(&k).arg(fields);
        b.add(&k, c);
    }
    b
}

fn fill(con: &mut Connection) {
    let mut b = Batch::new();
    for f in 0..20_000usize {
        let field = format!("f{f}");
        let k = shard(crc32fast::hash(field.as_bytes()) as usize % SHARDS);
        b.add(&k, redis::cmd("HSET").arg(&k).arg(&field).arg("v").clone());
    }
    b.run(con).expect("fill").all::<i64>().expect("HSET");
}

/// Median seconds per fan-out of `make()` on the sync connection.
fn time_sync(con: &mut Connection, reps: usize, make: &dyn Fn() -> Batch) -> f64 {
    make().run(con).expect("warm up");
    let mut per = Vec::new();
    for _ in 0..common::rounds() {
        let t = Instant::now();
        for _ in 0..reps {
            let r = make().run(con).expect("fan-out");
            assert!(!r.is_empty());
        }
        per.push(t.elapsed().as_secs_f64() / reps as f64);
    }
    median(&mut per)
}

fn time_async(
    rt: &tokio::runtime::Runtime,
    con: &mut AsyncConnection,
    reps: usize,
    make: &dyn Fn() -> Batch,
) -> f64 {
    rt.block_on(async {
        make().run_async(con).await.expect("warm up");
        let mut per = Vec::new();
        for _ in 0..common::rounds() {
            let t = Instant::now();
            for _ in 0..reps {
                let r = make().run_async(con).await.expect("fan-out");
                assert!(!r.is_empty());
            }
            per.push(t.elapsed().as_secs_f64() / reps as f64);
        }
        median(&mut per)
    })
}

fn main() {
    let reps = common::env_or("BENCH_REPS", 20);
    let server = common::server(&[]);
    let cluster = LocalCluster::start().unwrap_or_else(|e| {
        eprintln!("benchmark needs a cluster: {e}");
        std::process::exit(2)
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut one = Connection::open(server.url()).expect("connect");
    let mut many = Connection::open(cluster.nodes()[0].url()).expect("connect cluster");
    assert!(many.is_cluster());
    fill(&mut one);
    fill(&mut many);
    let mut aone = rt
        .block_on(AsyncConnection::open(server.url()))
        .expect("connect");
    let mut amany = rt
        .block_on(AsyncConnection::open(cluster.nodes()[0].url()))
        .expect("connect cluster");
    println!(
        "one server on 127.0.0.1:{}, a 3-node cluster; median of {} rounds of {reps} fan-outs",
        server.port(),
        common::rounds()
    );
    let mut t = Table::new(
        "Fan-out: ms per call, 3-node cluster vs one server (same data, same run)",
        &[
            "workload",
            "driver",
            "one server ms",
            "cluster ms",
            "cluster / one server",
        ],
    );
    let workloads: [(&str, &dyn Fn() -> Batch); 2] = [
        ("HLEN of 2,700 shards (len)", &hlen_batch),
        ("HMGET of 1,000 fields (get_many)", &hmget_batch),
    ];
    for (name, make) in workloads {
        let s1 = time_sync(&mut one, reps, make);
        let sc = time_sync(&mut many, reps, make);
        t.row(vec![
            name.into(),
            "sync".into(),
            num(s1 * 1e3),
            num(sc * 1e3),
            format!("{:.2}x", sc / s1),
        ]);
        let a1 = time_async(&rt, &mut aone, reps, make);
        let ac = time_async(&rt, &mut amany, reps, make);
        t.row(vec![
            name.into(),
            "async".into(),
            num(a1 * 1e3),
            num(ac * 1e3),
            format!("{:.2}x", ac / a1),
        ]);
    }
    t.print();
}
