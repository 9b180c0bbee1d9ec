//! `cargo bench --bench fanout`: a fan-out over many keys on a 3-node Redis
//! Cluster against one server holding the same data, same run, through both
//! drivers. Starts its own redis-server and cluster on loopback.
//!
//! Workloads: the raw batches (`HLEN` of 2,700 keys, `HMGET` of 1,000 fields
//! spread over them) and the pattern operations built on them: a sharded
//! hash's `len` over 2,700 shards and `get_many` of 1,000 fields, and a
//! visit counter's `distinct_over` 7 days (48 shards a day, 5,000 members
//! each). Environment: `BENCH_ROUNDS` (default 5), `BENCH_REPS` fan-outs per
//! round (default 20).

mod common;

use std::time::Instant;

use common::{Table, median, num};
use redis_patterns::chrono::{NaiveDate, Utc};
use redis_patterns::sharded_hash::ShardedHash;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{AsyncConnection, Batch, Connection, Op, Request, Retention};
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
    let pairs: Vec<(String, String)> = (0..20_000)
        .map(|f| (format!("f{f}"), "v".to_string()))
        .collect();
    for chunk in pairs.chunks(5_000) {
        hash()
            .set_many(chunk)
            .run(con)
            .expect("fill the sharded hash");
    }
    for i in 0..DAYS {
        // Overlapping days: 5,000 members a day, 2,000 new ones each day.
        let members: Vec<i64> = (i64::from(i) * 2_000..i64::from(i) * 2_000 + 5_000).collect();
        visits()
            .add_batch(day(i), &members)
            .run(con)
            .expect("fill visits");
    }
}

/// A workload: builds the op to time; its result is checked against the
/// one server's (`u64` summary: a length, a count, a number of replies).
type Make = dyn Fn() -> Op<u64>;

/// Median seconds per fan-out of `make()` on the sync connection, and the
/// op's answer.
fn time_sync(con: &mut Connection, reps: usize, make: &Make) -> (f64, u64) {
    let answer = make().run(con).expect("warm up");
    let mut per = Vec::new();
    for _ in 0..common::rounds() {
        let t = Instant::now();
        for _ in 0..reps {
            assert_eq!(make().run(con).expect("fan-out"), answer);
        }
        per.push(t.elapsed().as_secs_f64() / reps as f64);
    }
    (median(&mut per), answer)
}

fn time_async(
    rt: &tokio::runtime::Runtime,
    con: &mut AsyncConnection,
    reps: usize,
    make: &Make,
) -> (f64, u64) {
    rt.block_on(async {
        let answer = make().run_async(con).await.expect("warm up");
        let mut per = Vec::new();
        for _ in 0..common::rounds() {
            let t = Instant::now();
            for _ in 0..reps {
                assert_eq!(make().run_async(con).await.expect("fan-out"), answer);
            }
            per.push(t.elapsed().as_secs_f64() / reps as f64);
        }
        (median(&mut per), answer)
    })
}

/// A raw batch as a workload: its number of replies.
fn replies(batch: Batch) -> Op<u64> {
    Op::send(batch, |r| Ok(r.len() as u64))
}

fn hash() -> ShardedHash {
    ShardedHash::new("bench:sh", SHARDS as u32).expect("valid")
}

fn fields() -> Vec<String> {
    (0..1000).map(|f| format!("f{f}")).collect()
}

const DAYS: u32 = 7;

fn day(i: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2030, 1, 1).expect("date") + redis_patterns::chrono::Days::new(i.into())
}

fn visits() -> VisitCounter<Utc> {
    VisitCounter::builder("bench", Utc, 48)
        .retention(Retention::Forever)
        .build()
        .expect("valid")
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
    let workloads: [(&str, &Make); 5] = [
        ("Batch: HLEN of 2,700 keys", &|| replies(hlen_batch())),
        ("Batch: HMGET of 1,000 fields", &|| replies(hmget_batch())),
        ("ShardedHash::len, 2,700 shards", &|| hash().len()),
        ("ShardedHash::get_many, 1,000 fields", &|| {
            hash()
                .get_many::<Option<String>, _>(&fields())
                .map(|v| v.iter().filter(|x| x.is_some()).count() as u64)
        }),
        ("VisitCounter::distinct_over, 7 days", &|| {
            visits().distinct_over(&(0..DAYS).map(day).collect::<Vec<_>>())
        }),
    ];
    for (name, make) in workloads {
        let (s1, want) = time_sync(&mut one, reps, make);
        let (sc, got) = time_sync(&mut many, reps, make);
        assert_eq!(
            got, want,
            "{name}: the cluster answers what one server does"
        );
        t.row(vec![
            name.into(),
            "sync".into(),
            num(s1 * 1e3),
            num(sc * 1e3),
            format!("{:.2}x", sc / s1),
        ]);
        let (a1, _) = time_async(&rt, &mut aone, reps, make);
        let (ac, got) = time_async(&rt, &mut amany, reps, make);
        assert_eq!(got, want, "{name}: async on the cluster");
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
