//! `cargo bench --bench rolling`: adds/s of the rolling store for 10, 100 and
//! 1,000 shards (limit / shard_size), against a faithful copy of the Java
//! rolling-store recipe's round-trip sequence, in the same run on the same
//! server.
//!
//! Three ways to add one record, each on one connection, one add at a time:
//!
//! * `script` — [`RollingStore::add`]: one `EVALSHA` with the meta key and two
//!   ring slots (5 keys) whatever the ring size.
//! * `whole ring` — the same script called with every ring slot in `KEYS`
//!   (2 * shards + 1 keys): the design the crate avoids, measured to show why.
//! * `Java recipe` — the Java rolling-store recipe's sequence: `SMEMBERS` of the routing set, sort
//!   the shard names on the client, `clearKeys` (`DEL` + `SREM` of the oldest
//!   shards) when the set has more than limit / shard_size names, `HLEN` of
//!   the newest shard, then `SADD` (new shard only), `EXPIRE` set, `HSET`,
//!   `EXPIRE` shard — each its own round trip.
//!
//! Every store is first filled to its steady state (ring full, every
//! shard_size-th add evicts a shard): the script stores by real adds, the
//! Java recipe's routing set and shards by a pipeline. Within a round, each variant
//! runs in chunks of 100 adds that cycle through the three ring sizes, so
//! that load from other processes on a shared machine hits all sizes alike;
//! each rate is 100 adds over the median time of a chunk (all rounds). Server µs per add come from
//! `INFO commandstats` over an untimed warm-up round.
//!
//! It also prints the memory per stored record of the script's layout (shard
//! hash + order list) and the Java recipe's (shard hash + routing set).
//!
//! Env: `BENCH_ROUNDS` (default 5), `BENCH_SHARD_SIZE` (default 100),
//! `BENCH_ADDS` (adds per round, variant and ring size, rounded up to
//! chunks of 100; default 3000).

mod common;

use std::time::{Duration, Instant};

use redis::Connection;
use redis_patterns::rolling::RollingStore;
use redis_patterns::{Request, scripts};
use serde::Serialize;

use common::{Table, command_stats, median, num, ratio, reset_stats, used_memory};

#[derive(Serialize)]
struct Tx<'a> {
    id: u64,
    merchant: &'a str,
    amount_cents: i64,
    currency: &'a str,
}

fn tx(id: u64) -> Tx<'static> {
    Tx {
        id,
        merchant: "m-4711",
        amount_cents: (id as i64 % 97) * 125 + 10,
        currency: "CNY",
    }
}

const TTL_SECS: u64 = 3600;
const EXPIRE_ADD: u64 = 60;
const SPLIT_KEY_PAD: &str = "MCT";

/// The Java recipe's `add` + `generateSplitKey` (+ its unshown `clearKeys`: delete
/// the oldest shards and drop them from the routing set), one command per
/// round trip, as Jedis sends them. The comparator compares the numbers as
/// `i64` (the recipe's `(int)(x - y)` overflow is not reproduced).
struct JavaRecipe {
    key: String,
    limit: u64,
    shard_size: u64,
}

impl JavaRecipe {
    fn split_key(&self, n: i64) -> String {
        format!("{SPLIT_KEY_PAD}_{}${n}", self.key)
    }

    fn number(name: &str) -> i64 {
        name.split('$')
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    fn generate_split_key(&self, con: &mut Connection) -> (bool, String) {
        let keys: Vec<String> = redis::cmd("SMEMBERS").arg(&self.key).query(con).unwrap();
        if keys.is_empty() {
            return (true, self.split_key(1));
        }
        let mut sorted = keys;
        sorted.sort_by_key(|k| Self::number(k));
        let max = Self::number(sorted.last().unwrap());
        let keep = (self.limit / self.shard_size) as usize;
        if sorted.len() > keep {
            // clearKeys: the oldest shards beyond the limit.
            for old in &sorted[..sorted.len() - keep] {
                let _: () = redis::cmd("DEL").arg(old).query(con).unwrap();
                let _: () = redis::cmd("SREM")
                    .arg(&self.key)
                    .arg(old)
                    .query(con)
                    .unwrap();
            }
        }
        let newest = self.split_key(max);
        let len: u64 = redis::cmd("HLEN").arg(&newest).query(con).unwrap();
        if len >= self.shard_size {
            (true, self.split_key(max + 1))
        } else {
            (false, newest)
        }
    }

    fn add(&self, con: &mut Connection, field: &str, value: &impl Serialize) {
        let (is_new, split_key) = self.generate_split_key(con);
        if is_new {
            let _: () = redis::cmd("SADD")
                .arg(&self.key)
                .arg(&split_key)
                .query(con)
                .unwrap();
        }
        let _: () = redis::cmd("EXPIRE")
            .arg(&self.key)
            .arg(TTL_SECS + EXPIRE_ADD)
            .query(con)
            .unwrap();
        let json = serde_json::to_string(value).unwrap();
        let _: () = redis::cmd("HSET")
            .arg(&split_key)
            .arg(field)
            .arg(json)
            .query(con)
            .unwrap();
        let _: () = redis::cmd("EXPIRE")
            .arg(&split_key)
            .arg(TTL_SECS)
            .query(con)
            .unwrap();
    }

    /// The steady state the Java recipe reaches: limit / shard_size full shards.
    fn prefill(&self, con: &mut Connection, next_id: &mut u64) {
        let shards = (self.limit / self.shard_size) as i64;
        for n in 1..=shards {
            let mut pipe = redis::pipe();
            let name = self.split_key(n);
            pipe.cmd("SADD").arg(&self.key).arg(&name).ignore();
            for _ in 0..self.shard_size {
                *next_id += 1;
                pipe.cmd("HSET")
                    .arg(&name)
                    .arg(format!("tx{next_id}"))
                    .arg(serde_json::to_string(&tx(*next_id)).unwrap())
                    .ignore();
            }
            pipe.cmd("EXPIRE").arg(&name).arg(TTL_SECS).ignore();
            let _: () = pipe.query(con).unwrap();
        }
        let _: () = redis::cmd("EXPIRE")
            .arg(&self.key)
            .arg(TTL_SECS + EXPIRE_ADD)
            .query(con)
            .unwrap();
    }
}

/// Server time and calls per add, from `INFO commandstats`.
fn server_cost(con: &mut Connection, commands: &[&str], adds: u64) -> (f64, f64) {
    let (mut calls, mut usec) = (0, 0);
    for c in commands {
        let (n, u) = command_stats(con, c);
        calls += n;
        usec += u;
    }
    (usec as f64 / adds as f64, calls as f64 / adds as f64)
}

struct Case {
    shards: u64,
    limit: u64,
    script_key: String,
    ring_key: String,
    java: JavaRecipe,
    /// Times of the timed 100-add chunks, in seconds, per variant.
    script_chunks: Vec<f64>,
    ring_chunks: Vec<f64>,
    java_chunks: Vec<f64>,
    script_cost: (f64, f64),
    ring_cost: (f64, f64),
    java_cost: (f64, f64),
}

fn main() {
    let server = common::server(&[]);
    let mut con = server.connection();
    let mut pc = redis_patterns::Connection::open(server.url()).unwrap();
    let shard_size = common::env_or("BENCH_SHARD_SIZE", 100);
    let adds = common::env_or("BENCH_ADDS", 3000);
    let rounds = common::rounds();
    let mut next_id = 0u64;
    let store_of =
        |limit: u64| RollingStore::new(limit, shard_size, Duration::from_secs(TTL_SECS)).unwrap();

    println!(
        "rolling: shard_size {shard_size}, {adds} adds per round and variant, {rounds} rounds (+1 warm-up), redis-server on 127.0.0.1:{}",
        server.port()
    );
    let mut cases: Vec<Case> = [10u64, 100, 1000]
        .into_iter()
        .map(|shards| {
            let limit = shards * shard_size;
            Case {
                shards,
                limit,
                script_key: format!("script:{shards}"),
                ring_key: format!("ring:{shards}"),
                java: JavaRecipe {
                    key: format!("java:{{{shards}}}"),
                    limit,
                    shard_size,
                },
                script_chunks: Vec::new(),
                ring_chunks: Vec::new(),
                java_chunks: Vec::new(),
                script_cost: (0.0, 0.0),
                ring_cost: (0.0, 0.0),
                java_cost: (0.0, 0.0),
            }
        })
        .collect();

    // Steady state: every ring full (limit + shard_size records), the Java recipe's
    // set holding limit / shard_size full shards.
    // Memory per stored record is measured on the way (used_memory deltas).
    let t = Instant::now();
    let mut memory = Table::new(
        "memory per stored record after the prefill (INFO used_memory delta / records)",
        &[
            "shards",
            "script records",
            "script B/record",
            "Java records",
            "Java B/record",
            "script/Java",
        ],
    );
    // Load the script and warm the connection before measuring memory.
    let warm = store_of(shard_size);
    warm.add("warm-up", "tx0", &tx(0)).run(&mut pc).unwrap();
    warm.clear("warm-up").run(&mut pc).unwrap();
    for case in &cases {
        let store = store_of(case.limit);
        let mut script_bytes = 0.0;
        for key in [&case.script_key, &case.ring_key] {
            let before = used_memory(&mut con);
            for _ in 0..store.capacity() {
                next_id += 1;
                store
                    .add(key, &format!("tx{next_id}"), &tx(next_id))
                    .run(&mut pc)
                    .unwrap();
            }
            assert_eq!(store.len(key).run(&mut pc).unwrap(), store.capacity());
            if key == &case.script_key {
                script_bytes = (used_memory(&mut con) - before) as f64 / store.capacity() as f64;
            }
        }
        let before = used_memory(&mut con);
        case.java.prefill(&mut con, &mut next_id);
        let java_records = case.limit;
        let java_bytes = (used_memory(&mut con) - before) as f64 / java_records as f64;
        memory.row(vec![
            case.shards.to_string(),
            store.capacity().to_string(),
            num(script_bytes),
            java_records.to_string(),
            num(java_bytes),
            ratio(script_bytes, java_bytes),
        ]);
    }
    println!("prefilled in {:.1} s", t.elapsed().as_secs_f64());

    // Per case: one store (its head cache primed by the first add) and the
    // whole-ring key list, built once, outside the timed loops.
    let prepared: Vec<(RollingStore, String, Vec<String>)> = cases
        .iter()
        .map(|case| {
            let store = store_of(case.limit);
            let meta = store.meta_key(&case.ring_key).unwrap();
            let ring: Vec<String> = store
                .shard_keys(&case.ring_key)
                .unwrap()
                .into_iter()
                .zip(store.order_keys(&case.ring_key).unwrap())
                .flat_map(|(h, o)| [h, o])
                .collect();
            (store, meta, ring)
        })
        .collect();

    // `n` adds of one variant to one case; returns the time they took.
    // The script variants run on the crate's connection, the Java recipe on
    // a plain one.
    type Cons<'a> = (&'a mut Connection, &'a mut redis_patterns::Connection);
    let batch = |(con, pc): Cons, c: usize, variant: usize, n: u64, next_id: &mut u64| {
        let (store, meta, ring) = &prepared[c];
        let case = &cases[c];
        let t = Instant::now();
        for _ in 0..n {
            *next_id += 1;
            let field = format!("tx{next_id}");
            match variant {
                0 => {
                    store
                        .add(&case.script_key, &field, &tx(*next_id))
                        .run(pc)
                        .unwrap();
                }
                1 => {
                    let json = serde_json::to_vec(&tx(*next_id)).unwrap();
                    let reply = scripts::rolling::add(
                        meta,
                        ring,
                        0,
                        store.shards() as i64,
                        shard_size as i64,
                        &field,
                        &json,
                        store.ttl().as_millis() as i64,
                        store.index_ttl().as_millis() as i64,
                    )
                    .run(pc)
                    .unwrap();
                    assert_ne!(reply[0], 0);
                }
                _ => case.java.add(con, &field, &tx(*next_id)),
            }
        }
        t.elapsed()
    };

    // Warm-up round, one case and variant at a time, also measuring the
    // server's cost per add (INFO commandstats between resets).
    let mut costs = vec![[(0.0, 0.0); 3]; cases.len()];
    for (c, cost) in costs.iter_mut().enumerate() {
        for (variant, cost) in cost.iter_mut().enumerate() {
            reset_stats(&mut con);
            batch((&mut con, &mut pc), c, variant, adds, &mut next_id);
            *cost = match variant {
                0 | 1 => server_cost(&mut con, &["evalsha"], adds),
                _ => server_cost(
                    &mut con,
                    &["smembers", "del", "srem", "hlen", "sadd", "expire", "hset"],
                    adds,
                ),
            };
        }
    }

    // Timed rounds. Within a round each variant runs in chunks of CHUNK adds
    // that cycle through the three ring sizes, so that load from other
    // processes falls on all sizes alike. A size's rate is CHUNK over the
    // median time of its chunks (all rounds), which a chunk descheduled by a
    // busy machine does not move.
    const CHUNK: u64 = 100;
    // chunks[variant][case]: the time of every chunk.
    let mut chunks = vec![vec![Vec::new(); cases.len()]; 3];
    for _ in 0..rounds {
        for (variant, chunks) in chunks.iter_mut().enumerate() {
            let mut done = 0;
            while done < adds {
                for (c, chunks) in chunks.iter_mut().enumerate() {
                    let t = batch((&mut con, &mut pc), c, variant, CHUNK, &mut next_id);
                    chunks.push(t.as_secs_f64());
                }
                done += CHUNK;
            }
        }
    }
    for (c, case) in cases.iter_mut().enumerate() {
        case.script_chunks = std::mem::take(&mut chunks[0][c]);
        case.ring_chunks = std::mem::take(&mut chunks[1][c]);
        case.java_chunks = std::mem::take(&mut chunks[2][c]);
        (case.script_cost, case.ring_cost, case.java_cost) =
            (costs[c][0], costs[c][1], costs[c][2]);
    }

    let mut table = Table::new(
        "adds/s, one connection, one add at a time (100 / median time of a 100-add chunk); server µs/add from INFO commandstats (warm-up round)",
        &[
            "shards",
            "limit",
            "script adds/s",
            "µs/add srv",
            "whole ring adds/s",
            "µs/add srv",
            "Java adds/s",
            "µs/add srv",
            "Java cmds/add",
            "script/Java",
            "script/whole ring",
        ],
    );
    let mut summary = Vec::new();
    for case in cases.iter_mut() {
        let s = CHUNK as f64 / median(&mut case.script_chunks);
        let w = CHUNK as f64 / median(&mut case.ring_chunks);
        let d = CHUNK as f64 / median(&mut case.java_chunks);
        summary.push((s, w, d));
        table.row(vec![
            case.shards.to_string(),
            case.limit.to_string(),
            num(s),
            format!("{:.1}", case.script_cost.0),
            num(w),
            format!("{:.1}", case.ring_cost.0),
            num(d),
            format!("{:.1}", case.java_cost.0),
            format!("{:.2}", case.java_cost.1),
            ratio(s, d),
            ratio(s, w),
        ]);
    }
    table.print();

    let (first, last) = (summary[0], summary[summary.len() - 1]);
    let mut flat = Table::new(
        "rate at 1,000 shards / rate at 10 shards",
        &[
            "variant",
            "10 shards",
            "1,000 shards",
            "ratio",
            "within 20 %",
        ],
    );
    for (name, a, b) in [
        ("script", first.0, last.0),
        ("whole ring", first.1, last.1),
        ("Java recipe", first.2, last.2),
    ] {
        flat.row(vec![
            name.to_string(),
            num(a),
            num(b),
            ratio(b, a),
            if (b / a - 1.0).abs() <= 0.2 {
                "yes"
            } else {
                "no"
            }
            .to_string(),
        ]);
    }
    flat.print();
    memory.print();
}
