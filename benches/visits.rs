//! `cargo bench --bench visits`: memory per member of the sharded intset vs
//! one plain set vs HyperLogLog, visits/s of the script (unpipelined,
//! pipelined, batched) vs the PHP unique-visitor recipe's seven-round-trip
//! sequence, and whether that sequence over-counts under concurrency. Everything against its own
//! throwaway redis-server, baselines measured in the same run.
//!
//! Env: `BENCH_ROUNDS` (default 5), `BENCH_MEMBERS` (default 1,000,000),
//! `BENCH_OPS` (unpipelined ops per round, default 5,000), `BENCH_ONLY=memory`
//! (the memory table only).

mod common;

use std::collections::HashSet;

use chrono::{NaiveDate, Utc};
use common::{Table, num, ratio};
use redis_patterns::visits::{self, VisitCounter};
use redis_patterns::{Batch, Connection, Request};
use redis_patterns_test_support::LocalServer;

fn flush(con: &mut redis::Connection) {
    let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(con).unwrap();
}

/// The PHP recipe's `ShardSet::count`, faithfully: SISMEMBER, then for a new
/// member SADD, INCR, TTL, EXPIREAT, TTL, EXPIREAT — separate round trips,
/// base key `count`, 10 shards (`$total=10`), crc32 of the member string,
/// expiry at 23:59:59 of the current day (here UTC).
fn php_count(con: &mut redis::Connection, member: i64, end_of_day: i64) -> bool {
    let shard_key = format!(
        "count_{}",
        crc32fast::hash(member.to_string().as_bytes()) % 10
    );
    let exists: bool = redis::cmd("SISMEMBER")
        .arg(&shard_key)
        .arg(member)
        .query(con)
        .unwrap();
    if exists {
        return false;
    }
    let _: i64 = redis::cmd("SADD")
        .arg(&shard_key)
        .arg(member)
        .query(con)
        .unwrap();
    let _: i64 = redis::cmd("INCR").arg("count").query(con).unwrap();
    let ttl1: i64 = redis::cmd("TTL").arg("count").query(con).unwrap();
    if ttl1 == -1 {
        let _: i64 = redis::cmd("EXPIREAT")
            .arg("count")
            .arg(end_of_day)
            .query(con)
            .unwrap();
    }
    let ttl2: i64 = redis::cmd("TTL").arg(&shard_key).query(con).unwrap();
    if ttl2 == -1 {
        let _: i64 = redis::cmd("EXPIREAT")
            .arg(&shard_key)
            .arg(end_of_day)
            .query(con)
            .unwrap();
    }
    true
}

fn today_end_utc() -> i64 {
    let today = Utc::now().date_naive();
    today.and_hms_opt(23, 59, 59).unwrap().and_utc().timestamp()
}

/// 8 threads x 10,000 ids, 50 % shared by all threads, shuffled per thread.
fn overlap_ids(t: i64) -> Vec<i64> {
    let mut v: Vec<i64> = (0..5_000)
        .chain((0..5_000).map(|i| 1_000_000 * (t + 1) + i))
        .collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t as u64;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

fn main() {
    let server = common::server(&[]);
    let mut con = server.connection();
    let members = common::env_or("BENCH_MEMBERS", 1_000_000);
    let ops = common::env_or("BENCH_OPS", 5_000);
    let day = NaiveDate::from_ymd_opt(2099, 1, 1).unwrap();
    println!(
        "redis-server on port {}; {} rounds; {members} members for memory; {ops} unpipelined ops per round",
        server.port(),
        common::rounds()
    );

    memory(&server, &mut con, members, day);
    if std::env::var("BENCH_ONLY").as_deref() == Ok("memory") {
        return;
    }
    let mut pc = Connection::open(server.url()).unwrap();
    let end = today_end_utc();
    throughput(&mut con, &mut pc, end, day, ops);
    over_count(&server, &mut con, &mut pc, end, day);
}

/// The bytes per member of each layout against a plain set.
fn memory(server: &LocalServer, con: &mut redis::Connection, members: usize, day: NaiveDate) {
    // A connection of its own, closed before memory is measured.
    let max_entries = visits::ShardPlan::max_intset_entries()
        .run(&mut Connection::open(server.url()).unwrap())
        .unwrap();
    let shards = visits::ShardPlan::plan_shards(members as u64, max_entries).unwrap();
    let mut mem = Table::new(
        &format!(
            "memory for {members} distinct members (used_memory delta; set-max-intset-entries {max_entries})"
        ),
        &["layout", "bytes", "B/member", "vs plain set", "notes"],
    );
    // Each layout loads on its own connection, closed before the second
    // reading, so client buffers are not counted as data.
    let url = server.url();
    let measure = |con: &mut redis::Connection, load: &mut dyn FnMut(&mut Connection)| {
        flush(con);
        let before = common::used_memory(con);
        {
            let mut loader = Connection::open(url.as_str()).unwrap();
            load(&mut loader);
        }
        // The server frees a closed client's buffers when it notices the close.
        let mut alone = false;
        for _ in 0..250 {
            let clients: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
            if clients.lines().count() == 1 {
                alone = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if !alone {
            eprintln!("warning: the loader connection was still open after 5 s; its buffers count");
        }
        let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
        let field = |name: &str| -> String {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .unwrap_or("?")
                .trim()
                .to_string()
        };
        if std::env::var("BENCH_DEBUG").is_ok() {
            eprintln!(
                "used_memory {} dataset {} overhead {} scripts {} vm_eval {}",
                field("used_memory"),
                field("used_memory_dataset"),
                field("used_memory_overhead"),
                field("used_memory_scripts"),
                field("used_memory_vm_eval")
            );
        }
        common::used_memory(con) - before
    };
    // One plain set of decimal members (the baseline).
    // Every member into `key` with `command` (SADD, PFADD), 10,000 a call.
    let add_all = |con: &mut Connection, command: &str, key: &str| {
        let all: Vec<i64> = (1..=members as i64).collect();
        for chunk in all.chunks(10_000) {
            let _: i64 = con.query(redis::cmd(command).arg(key).arg(chunk)).unwrap();
        }
    };
    let plain = measure(con, &mut |con| add_all(con, "SADD", "plain"));
    let enc: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("plain")
        .query(con)
        .unwrap();
    // A row: the bytes of a layout, per member, against the plain set.
    let mut row = |what: &str, bytes: u64, note: String| {
        mem.row(vec![
            what.into(),
            bytes.to_string(),
            num(bytes as f64 / members as f64),
            ratio(bytes as f64, plain as f64),
            note,
        ])
    };
    row("one plain set", plain, format!("encoding {enc}"));
    // The sharded intset: user ids 1..=N, planned shard count, with expiry.
    let counter = VisitCounter::new("mem", Utc, shards).unwrap();
    let mut report = String::new();
    let sharded = measure(con, &mut |con| {
        let all: Vec<i64> = (1..=members as i64).collect();
        for chunk in all.chunks(5_000) {
            counter.add_batch(day, chunk).run(con).unwrap();
        }
        let sizes = counter.shard_sizes(day).run(con).unwrap();
        let mut batch = Batch::new();
        for k in counter.shard_keys(day) {
            let mut cmd = redis::cmd("OBJECT");
            cmd.arg("ENCODING").arg(&k);
            batch.add(k, cmd);
        }
        let encs: Vec<String> = batch.run(con).unwrap().all().unwrap();
        let intsets = encs.iter().filter(|e| *e == "intset").count();
        assert_eq!(counter.count(day).run(con).unwrap(), members as u64);
        report = format!(
            "{shards} shards, fullest {}, {intsets}/{shards} intset",
            sizes.iter().max().unwrap()
        );
    });
    row("sharded intset (i32 ids)", sharded, report.clone());
    // The PHP recipe's ids: 8 hex digits of a hash (here crc32) as an
    // unsigned 32-bit value; above i32::MAX they force the 8-byte intset
    // encoding.
    let hex_ids = measure(con, &mut |con| {
        let all: Vec<i64> = (1..=members as i64)
            .map(|i| crc32fast::hash(format!("uid-{i}").as_bytes()) as i64)
            .collect();
        for chunk in all.chunks(5_000) {
            counter.add_batch(day, chunk).run(con).unwrap();
        }
        let c = counter.count(day).run(con).unwrap();
        report = format!("{c} counted (hash collisions lose {})", members as u64 - c);
    });
    row(
        "sharded intset (u32 hex ids, PHP recipe)",
        hex_ids,
        report.clone(),
    );
    let hll = measure(con, &mut |con| {
        add_all(con, "PFADD", "hll");
        let est: i64 = con.query(redis::cmd("PFCOUNT").arg("hll")).unwrap();
        report = format!(
            "approximate: PFCOUNT {est} ({:+.2} %)",
            (est as f64 - members as f64) / members as f64 * 100.0
        );
    });
    mem.row(vec![
        "HyperLogLog (PFADD)".into(),
        hll.to_string(),
        format!("{:.4}", hll as f64 / members as f64),
        ratio(hll as f64, plain as f64),
        report.clone(),
    ]);
    mem.print();
    flush(con);
}

/// Unpipelined adds of new and repeated members: the PHP recipe against the
/// scripts, single, pipelined and batched.
fn throughput(
    con: &mut redis::Connection,
    pc: &mut Connection,
    end: i64,
    day: NaiveDate,
    ops: usize,
) {
    let c = VisitCounter::new("tp", Utc, 64).unwrap();
    let mut next = 0i64;
    let mut fresh = |n: usize| -> Vec<i64> {
        let v: Vec<i64> = (next..next + n as i64).collect();
        next += n as i64;
        v
    };
    // Methods are measured in interleaved rounds (each round runs every
    // method once), so load from other processes hits them alike; each
    // figure is the median over rounds, after one warm-up round.
    let seen: Vec<i64> = (0..ops as i64).collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); 6];
    for round in 0..=common::rounds() {
        let mut timed = |slot: usize, n: usize, f: &mut dyn FnMut()| {
            let t = std::time::Instant::now();
            f();
            if round > 0 {
                samples[slot].push(n as f64 / t.elapsed().as_secs_f64());
            }
        };
        let batch = fresh(ops);
        timed(0, ops, &mut || {
            for &m in &batch {
                php_count(con, m, end);
            }
        });
        let batch = fresh(ops);
        timed(1, ops, &mut || {
            for &m in &batch {
                c.add(day, m).run(pc).unwrap();
            }
        });
        let batch = fresh(ops * 20);
        timed(2, ops * 20, &mut || {
            for chunk in batch.chunks(100) {
                c.add_pipelined(day, chunk).run(pc).unwrap();
            }
        });
        let batch = fresh(ops * 40);
        timed(3, ops * 40, &mut || {
            for chunk in batch.chunks(1_000) {
                c.add_batch(day, chunk).run(pc).unwrap();
            }
        });
        // Repeat visits (already counted members): the PHP recipe stops after SISMEMBER.
        timed(4, ops, &mut || {
            for &m in &seen {
                php_count(con, m, end);
            }
        });
        timed(5, ops, &mut || {
            for &m in &seen {
                c.add(day, m).run(pc).unwrap();
            }
        });
    }
    let med: Vec<f64> = samples.iter_mut().map(|v| common::median(v)).collect();
    let (php_new, script_new, piped, batched, php_repeat, script_repeat) =
        (med[0], med[1], med[2], med[3], med[4], med[5]);
    let mut tp = Table::new(
        "visits/s (median of rounds; ratio vs the PHP recipe's sequence for the same kind of visit)",
        &["method", "round trips", "visits/s", "vs PHP recipe"],
    );
    tp.row(vec![
        "PHP recipe, new member".into(),
        "7 per visit".into(),
        num(php_new),
        "1.00x".into(),
    ]);
    tp.row(vec![
        "visits.add, new member".into(),
        "1 per visit".into(),
        num(script_new),
        ratio(script_new, php_new),
    ]);
    tp.row(vec![
        "visits.add pipelined x100, new".into(),
        "1 per 100".into(),
        num(piped),
        ratio(piped, php_new),
    ]);
    tp.row(vec![
        "visits.add_batch x1000, new".into(),
        "1 per 1000".into(),
        num(batched),
        ratio(batched, php_new),
    ]);
    tp.row(vec![
        "PHP recipe, repeat visit".into(),
        "1 per visit".into(),
        num(php_repeat),
        "1.00x".into(),
    ]);
    tp.row(vec![
        "visits.add, repeat visit".into(),
        "1 per visit".into(),
        num(script_repeat),
        ratio(script_repeat, php_repeat),
    ]);
    tp.print();
}

/// What 8 threads with overlapping ids count: the recipe and the script
/// against the exact distinct count.
fn over_count(
    server: &LocalServer,
    con: &mut redis::Connection,
    pc: &mut Connection,
    end: i64,
    day: NaiveDate,
) {
    let exact: usize = (0..8).flat_map(overlap_ids).collect::<HashSet<i64>>().len();
    let mut oc = Table::new(
        "8 threads x 10,000 ids, 50 % overlap, one day: counter vs exact distinct",
        &[
            "run",
            "method",
            "exact",
            "counter",
            "sum SCARD",
            "over-count",
        ],
    );
    for run in 1..=3 {
        for method in ["PHP recipe", "visits.add"] {
            flush(con);
            let url = server.url();
            let c = VisitCounter::new("oc", Utc, 10).unwrap();
            std::thread::scope(|s| {
                for t in 0..8 {
                    let url = url.clone();
                    let c = c.clone();
                    s.spawn(move || {
                        if method == "PHP recipe" {
                            let mut con =
                                redis::Client::open(url).unwrap().get_connection().unwrap();
                            for m in overlap_ids(t) {
                                php_count(&mut con, m, end);
                            }
                        } else {
                            let mut con = Connection::open(url).unwrap();
                            for m in overlap_ids(t) {
                                c.add(day, m).run(&mut con).unwrap();
                            }
                        }
                    });
                }
            });
            let (counter, scard): (u64, u64) = if method == "PHP recipe" {
                let n: u64 = redis::cmd("GET").arg("count").query(con).unwrap();
                let mut pipe = redis::pipe();
                for i in 0..10 {
                    pipe.cmd("SCARD").arg(format!("count_{i}"));
                }
                let sizes: Vec<u64> = pipe.query(con).unwrap();
                (n, sizes.iter().sum())
            } else {
                (
                    c.count(day).run(pc).unwrap(),
                    c.shard_sizes(day).run(pc).unwrap().iter().sum(),
                )
            };
            oc.row(vec![
                run.to_string(),
                method.into(),
                exact.to_string(),
                counter.to_string(),
                scard.to_string(),
                format!("{:+}", counter as i64 - exact as i64),
            ]);
        }
    }
    oc.print();
}
