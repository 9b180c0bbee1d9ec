//! `cargo bench --bench expiring_map`: what per-entry expiry costs. The same
//! entries (19-byte payload: field `user:NNNNNN`, value `vNNNNNNN`, TTLs
//! spread over the hour past the first, one TTL per chunk of 1,000) in the
//! plain sharded hash (no expiry, the floor), the expiring map's portable
//! path and, where the server has per-field TTLs, its native path, all with
//! the planner's shard count and side by side on one server: bytes per
//! entry (the `used_memory` delta of loading each, after a warm-up that
//! loads the scripts and is flushed) and its ratio to the plain hash,
//! shards converted out of listpack, which path the planner chose and why;
//! then single-entry get and put calls per second (one call per round
//! trip; `BENCH_ROUNDS` rounds after a warm-up round, every layout in each
//! round, the order turning) beside the plain hash's `get` / `set`: the
//! median rate and the median of the per-round ratios; each map is timed
//! three times, its reads without max-idle (portable: `HMGET` and `TIME`;
//! native: `HMGET`), with a max-idle time of an hour, no entry due for a
//! push (portable: `HMGET` and `TIME`: the `expiring_map.get` script runs
//! only for an entry with less than 15/16 of the max-idle time left; native:
//! `HMGET` and `HPEXPIRE ... GT`), and with one of 3 hours, every entry due
//! (portable: `HMGET` and `TIME`, then the script in a second round trip;
//! native as before). The load average is printed before and after each
//! server.
//!
//! `EXPIRING_N` changes the entry count (default 1,000,000; e.g.
//! `EXPIRING_N=100000` for a quick run), `EXPIRING_CALLS` the calls per
//! round (default 2,000). Servers as for the compact bench:
//! `cargo bench --bench expiring_map -- --server redis --server valkey9`
//! (or `--server all`, or `BENCH_SERVER`); each gets its own server.

mod common;

use std::time::Duration;

use std::time::Instant;

use common::{BenchServer, Table, env_or, median, rounds, used_memory};
use redis_patterns::expiring_map::{ExpiringMap, MapPlan, Path};
use redis_patterns::sharded_hash::ShardedHash;
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

/// The max-idle time of the reads no entry is due for a push at (the
/// entries have 1 to 2 hours left, more than 15/16 of it).
const IDLE_NOT_DUE: Duration = Duration::from_secs(3600);
/// The max-idle time of the reads every entry is due for a push at (less
/// than 15/16 of it left) unless it was read in the last 11 minutes.
const IDLE_DUE: Duration = Duration::from_secs(3 * 3600);

/// One layout of the same entries: the plain sharded hash, or a map on one
/// path.
#[derive(Clone)]
enum Layout {
    Plain(ShardedHash),
    Map(ExpiringMap),
}

impl Layout {
    fn name(&self, chosen: Path) -> String {
        match self {
            Layout::Plain(_) => "plain sharded hash (no expiry)".into(),
            Layout::Map(m) if m.max_idle() == Some(IDLE_DUE) => format!(
                "expiring map, {}, reads with max-idle, each due for a push",
                m.path().name()
            ),
            Layout::Map(m) if m.max_idle().is_some() => {
                format!("expiring map, {}, reads with max-idle", m.path().name())
            }
            Layout::Map(m) if m.path() == chosen => {
                format!("expiring map, {} (chosen)", m.path().name())
            }
            Layout::Map(m) => format!("expiring map, {}", m.path().name()),
        }
    }

    fn load(&self, con: &mut Connection, n: u64) {
        for start in (0..n).step_by(CHUNK as usize) {
            match self {
                Layout::Plain(h) => h.set_many(&chunk(start, n)).run(con).map(drop),
                Layout::Map(m) => m
                    .put_many(&chunk(start, n), ttl_of(start))
                    .run(con)
                    .map(drop),
            }
            .unwrap();
        }
    }

    /// (shards converted out of listpack, shards).
    fn converted(&self, con: &mut Connection) -> (u64, u64) {
        let h = match self {
            Layout::Plain(h) => h.inspect(u64::MAX).run(con).unwrap(),
            Layout::Map(m) => m.inspect(u64::MAX).run(con).unwrap(),
        };
        (h.converted, h.sampled)
    }

    fn gets(&self, con: &mut Connection, n: u64) {
        for i in 0..calls_n() as u64 {
            let f = field(i * 7 % n);
            let v: Option<String> = match self {
                Layout::Plain(h) => h.get(f).run(con).unwrap(),
                Layout::Map(m) => m.get(f).run(con).unwrap(),
            };
            assert!(v.is_some(), "a live entry was not found");
        }
    }

    fn puts(&self, con: &mut Connection, n: u64) {
        let hour = Some(Duration::from_secs(3600));
        for i in 0..calls_n() as u64 {
            let (f, v) = (field(i * 7 % n), value(i));
            match self {
                Layout::Plain(h) => h.set(f, v).run(con).map(drop),
                Layout::Map(m) => m.put(f, v, hour).run(con).map(drop),
            }
            .unwrap();
        }
    }
}

/// The layouts of a server: the plain hash and the map on each path the
/// server has, all with the planner's shard count and limits.
fn layouts(pcon: &mut Connection, plan: &MapPlan) -> Vec<Layout> {
    let mut out = vec![Layout::Plain(
        ShardedHash::from_plan("sh", &plan.plan).unwrap(),
    )];
    let caps = redis_patterns::core::Caps::read().run(pcon).unwrap();
    let mut paths = vec![Path::Portable];
    if caps.hash_field_ttl && caps.hash_getex {
        paths.push(Path::Native);
    }
    for path in paths {
        let m = ExpiringMap::builder(&format!("em:{}", path.name()), plan.plan.shards)
            .limits(plan.plan.limits)
            .path(path)
            .build()
            .unwrap();
        out.push(Layout::Map(m));
    }
    out
}

/// Loads the scripts, the client's buffers and the allocator's first pages
/// with a small copy of each layout, then empties the server, so that the
/// first layout measured does not pay for them.
fn warm_up(con: &mut redis::Connection, pcon: &mut Connection, all: &[Layout]) {
    for l in all {
        l.load(pcon, CHUNK);
    }
    let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(con).unwrap();
}

fn one_server(t: &mut Table, calls: &mut Table, s: &BenchServer, n: u64) {
    let server = s.start(&[]);
    let mut con = server.connection();
    let mut pcon = Connection::open(server.url().as_str()).unwrap();
    let (chosen, plan) = ExpiringMap::planned("em", n).run(&mut pcon).unwrap();
    let chosen = chosen.path();
    println!(
        "{} (load {}): {} shards; planner chose {}: {}",
        s.label,
        load_average(),
        plan.plan.shards,
        chosen.name(),
        plan.path.reason
    );
    let all = layouts(&mut pcon, &plan);
    warm_up(&mut con, &mut pcon, &all);
    let mut plain = f64::NAN;
    for l in &all {
        let before = used_memory(&mut con);
        l.load(&mut pcon, n);
        let bytes = (used_memory(&mut con) as f64 - before as f64) / n as f64;
        if plain.is_nan() {
            plain = bytes;
        }
        let (converted, shards) = l.converted(&mut pcon);
        t.row(vec![
            s.label.clone(),
            l.name(chosen),
            format!("{bytes:.1}"),
            format!("{:.2}x", bytes / plain),
            format!("{converted} of {shards}"),
        ]);
    }
    // Each map's data again, read with a max-idle time: of an hour (the
    // entries have 1 to 2 hours left, so no read is due for a push: the
    // portable path reads with HMGET and TIME alone) and of 3 hours (every
    // entry has less than 15/16 of it left, so every read of an entry not
    // read in the last 11 minutes is due: the portable path's second round
    // trip, the script that writes; the native path's HPEXPIRE ... GT on
    // every read in both).
    let mut timed = all.clone();
    for idle in [IDLE_NOT_DUE, IDLE_DUE] {
        for l in &all {
            if let Layout::Map(m) = l {
                let path = m.path();
                let map = ExpiringMap::builder(&format!("em:{}", path.name()), plan.plan.shards)
                    .limits(plan.plan.limits)
                    .path(path)
                    .max_idle(Some(idle))
                    .build()
                    .unwrap();
                timed.push(Layout::Map(map));
            }
        }
    }
    for (row, ratios) in interleaved(&mut pcon, &timed, n).into_iter().enumerate() {
        let [get, get_x, put, put_x] = ratios;
        calls.row(vec![
            s.label.clone(),
            timed[row].name(chosen),
            format!("{get:.0}"),
            format!("{get_x:.2}x"),
            format!("{put:.0}"),
            format!("{put_x:.2}x"),
        ]);
    }
    println!("{}: done (load {})", s.label, load_average());
}

/// Calls per second of each layout, measured in interleaved rounds (every
/// layout's gets, then every layout's puts, the order turning each round)
/// after one warm-up round, so that load from other processes hits them
/// alike: per layout the median get/s, the median of the per-round ratios
/// to the plain hash's get/s, and the same for puts.
fn interleaved(con: &mut Connection, all: &[Layout], n: u64) -> Vec<[f64; 4]> {
    let k = all.len();
    let mut rates = vec![[Vec::new(), Vec::new()]; k];
    let mut ratios = vec![[Vec::new(), Vec::new()]; k];
    for round in 0..=rounds() {
        let mut this = vec![[0.0f64; 2]; k];
        for (slot, puts) in [false, true].into_iter().enumerate() {
            let mut order: Vec<usize> = (0..k).collect();
            order.rotate_left(round % k);
            for &i in &order {
                let t = Instant::now();
                if puts {
                    all[i].puts(con, n);
                } else {
                    all[i].gets(con, n);
                }
                this[i][slot] = calls_n() as f64 / t.elapsed().as_secs_f64();
            }
        }
        if round == 0 {
            continue;
        }
        for i in 0..k {
            for slot in 0..2 {
                rates[i][slot].push(this[i][slot]);
                ratios[i][slot].push(this[i][slot] / this[0][slot]);
            }
        }
    }
    (0..k)
        .map(|i| {
            let [g, p] = &mut rates[i];
            let [gx, px] = &mut ratios[i];
            [median(g), median(gx), median(p), median(px)]
        })
        .collect()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
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
