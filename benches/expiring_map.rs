//! `cargo bench --bench expiring_map`: what per-entry expiry costs. The same
//! entries (19-byte payload: field `user:NNNNNN`, value `vNNNNNNN`, TTLs
//! spread over an hour past the first) in the plain sharded hash (no
//! expiry, the floor), the expiring map's portable path and, where the
//! server has per-field TTLs, its native path, all with the planner's shard
//! count: bytes per entry (`used_memory` delta) and its ratio to the plain
//! hash, shards converted out of listpack, which path the planner chose and
//! why; then single-entry get and put calls per second (median of
//! `BENCH_ROUNDS` rounds, one call per round trip) beside the plain hash's
//! `get` / `set`.
//!
//! `EXPIRING_N` changes the entry count (default 1,000,000; e.g.
//! `EXPIRING_N=100000` for a quick run), `EXPIRING_CALLS` the calls per
//! round (default 2,000). Servers as for the compact bench:
//! `cargo bench --bench expiring_map -- --server redis --server valkey9`
//! (or `--server all`, or `BENCH_SERVER`); each gets its own server.

mod common;

use std::time::Duration;

use common::{BenchServer, Table, env_or, rate, used_memory};
use redis_patterns::expiring_map::{ExpiringMap, Path};
use redis_patterns::sharded_hash::{ListpackLimits, ShardedHash};
use redis_patterns::{Connection, Request};

const CHUNK: u64 = 1_000;

fn field(i: u64) -> String {
    format!("user:{i:06}")
}

fn value(i: u64) -> String {
    format!("v{i:07}")
}

fn chunk(start: u64, n: u64) -> Vec<(String, String)> {
    (start..(start + CHUNK).min(n))
        .map(|i| (field(i), value(i)))
        .collect()
}

/// A TTL per chunk of entries, spread over the hour after the first.
fn ttl_of(start: u64) -> Option<Duration> {
    Some(Duration::from_secs(3600 + (start / CHUNK * 37) % 3600))
}

fn per_entry(con: &mut redis::Connection, n: u64, load: impl FnOnce()) -> f64 {
    let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(con).unwrap();
    let before = used_memory(con);
    load();
    (used_memory(con) as f64 - before as f64) / n as f64
}

fn one_server(t: &mut Table, calls: &mut Table, s: &BenchServer, n: u64) {
    let server = s.start(&[]);
    let mut con = server.connection();
    let mut pcon = Connection::open(server.url().as_str()).unwrap();
    let (chosen, plan) = ExpiringMap::planned("em", n).run(&mut pcon).unwrap();
    let limits: ListpackLimits = plan.plan.limits;
    let shards = plan.plan.shards;
    println!(
        "{}: {} shards; planner chose {}: {}",
        s.label,
        shards,
        chosen.path().name(),
        plan.path.reason
    );
    let hash = ShardedHash::from_plan("sh", &plan.plan).unwrap();
    let plain = per_entry(&mut con, n, || {
        for start in (0..n).step_by(CHUNK as usize) {
            hash.set_many(&chunk(start, n)).run(&mut pcon).unwrap();
        }
    });
    let plain_health = hash.inspect(u64::MAX).run(&mut pcon).unwrap();
    t.row(vec![
        s.label.clone(),
        "plain sharded hash (no expiry)".into(),
        format!("{plain:.1}"),
        "1.00x".into(),
        format!("{} of {}", plain_health.converted, plain_health.sampled),
    ]);
    let caps = redis_patterns::core::server_caps().run(&mut pcon).unwrap();
    let mut paths = vec![Path::Portable];
    if caps.hash_field_ttl && caps.hash_getex {
        paths.push(Path::Native);
    }
    let get_floor = rate(calls_n(), || {
        for i in 0..calls_n() as u64 {
            let _: Option<String> = hash.get(field(i * 7 % n)).run(&mut pcon).unwrap();
        }
    });
    let put_floor = rate(calls_n(), || {
        for i in 0..calls_n() as u64 {
            hash.set(field(i * 7 % n), value(i)).run(&mut pcon).unwrap();
        }
    });
    calls.row(vec![
        s.label.clone(),
        "plain sharded hash".into(),
        format!("{get_floor:.0}"),
        "1.00x".into(),
        format!("{put_floor:.0}"),
        "1.00x".into(),
    ]);
    for path in paths {
        let m = ExpiringMap::builder("em", shards)
            .limits(limits)
            .path(path)
            .build()
            .unwrap();
        let bytes = per_entry(&mut con, n, || {
            for start in (0..n).step_by(CHUNK as usize) {
                m.put_many(&chunk(start, n), ttl_of(start))
                    .run(&mut pcon)
                    .unwrap();
            }
        });
        let health = m.inspect(u64::MAX).run(&mut pcon).unwrap();
        let mark = if path == chosen.path() {
            " (chosen)"
        } else {
            ""
        };
        t.row(vec![
            s.label.clone(),
            format!("expiring map, {}{mark}", path.name()),
            format!("{bytes:.1}"),
            format!("{:.2}x", bytes / plain),
            format!("{} of {}", health.converted, health.sampled),
        ]);
        let hour = Some(Duration::from_secs(3600));
        let get = rate(calls_n(), || {
            for i in 0..calls_n() as u64 {
                let _: Option<String> = m.get(field(i * 7 % n)).run(&mut pcon).unwrap();
            }
        });
        let put = rate(calls_n(), || {
            for i in 0..calls_n() as u64 {
                m.put(field(i * 7 % n), value(i), hour)
                    .run(&mut pcon)
                    .unwrap();
            }
        });
        calls.row(vec![
            s.label.clone(),
            format!("expiring map, {}", path.name()),
            format!("{get:.0}"),
            format!("{:.2}x", get / get_floor),
            format!("{put:.0}"),
            format!("{:.2}x", put / put_floor),
        ]);
    }
}

fn calls_n() -> usize {
    env_or("EXPIRING_CALLS", 2_000)
}

fn main() {
    let n: u64 = env_or("EXPIRING_N", 1_000_000);
    let servers = common::bench_servers();
    println!("expiring_map: {n} entries of a 19-byte payload, TTLs from 1 to 2 hours");
    let mut t = Table::new(
        &format!("memory: used_memory delta per entry, {n} entries, planner's shard count"),
        &[
            "server",
            "layout",
            "bytes/entry",
            "x plain hash",
            "shards converted",
        ],
    );
    let mut calls = Table::new(
        "single-entry calls per second, one per round trip (median of the rounds)",
        &["server", "layout", "get/s", "x plain", "put/s", "x plain"],
    );
    for s in &servers {
        one_server(&mut t, &mut calls, s, n);
    }
    t.print();
    calls.print();
}
