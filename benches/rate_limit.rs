//! `cargo bench --bench rate_limit`: rate-limit decisions per second against
//! the one-round-trip ceiling (a bare `EVALSHA` of a trivial script), one
//! call at a time and pipelined 16 deep; the server's microseconds per call
//! (`INFO commandstats`); bytes per subject key (`MEMORY USAGE`). Starts its
//! own redis-server; every figure is a median of rounds of the same run,
//! each workload interleaved with the ceiling's.
//!
//! Besides the three limiters, a "floor" script is measured the same way:
//! `TIME`, `GET`, `SET` and a five-integer reply, with no checks and no
//! arithmetic — the least any script does that decides on the server's
//! clock from one key and writes it back.
//!
//! Environment: `BENCH_ROUNDS` (default 5), `BENCH_CALLS` calls per round
//! (default 20000), `BENCH_SUBJECTS` subjects the calls cycle through
//! (default 10000).

mod common;

use std::time::Duration;

use common::{Table, median, num, paired};
use redis_patterns::rate_limit::{Limit, RateLimiter};
use redis_patterns::{Connection, Op, Request};

/// The ceiling's script: one round trip, no work.
const TRIVIAL: &str = "return 1";

/// The floor: what a server-clock decision on one key cannot do without.
const FLOOR: &str = "local t = redis.call('TIME')
local v = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], t[1], 'PX', 60000)
return {0, 1, 2, -1, 4}";

/// What runs against the ceiling: a limiter through the crate's API and
/// driver, or the floor script through redis-rs.
enum Workload {
    Limiter(RateLimiter),
    Floor(String),
}

/// The workloads: the floor, then GCRA (bursts of 10, 100 per second), the
/// sliding counter and the sliding log (100 per second each). Calls cycle
/// through many subjects, so most are allowed (the path that writes).
fn workloads(floor_sha: &str) -> Vec<(&'static str, Workload)> {
    let sec = Duration::from_secs(1);
    let mut out = vec![(
        "floor: TIME + GET + SET",
        Workload::Floor(floor_sha.to_string()),
    )];
    for (name, limit) in [
        ("GCRA throttle", Limit::gcra(9, 100, sec)),
        ("sliding counter", Limit::sliding_counter(100, sec)),
        ("sliding log", Limit::sliding_log(100, sec)),
    ] {
        let limiter = RateLimiter::new(limit).expect("valid limit");
        out.push((name, Workload::Limiter(limiter)));
    }
    out
}

fn evalsha(sha: &str, key: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(sha).arg(1).arg(key);
    cmd
}

impl Workload {
    /// One decision per subject, as one batch (one pipeline).
    fn batch(&self, raw: &mut redis::Connection, con: &mut Connection, subjects: &[&String]) {
        match self {
            Workload::Limiter(limiter) => {
                let ops = subjects.iter().map(|s| limiter.throttle(s, 1)).collect();
                let v = Op::join(ops).run(con).expect("throttles, one batch");
                assert_eq!(v.len(), subjects.len());
            }
            Workload::Floor(sha) => {
                let mut pipe = redis::pipe();
                for s in subjects {
                    pipe.add_command(evalsha(sha, &format!("floor:{{{s}}}")));
                }
                let v: Vec<Vec<i64>> = pipe.query(raw).expect("floor pipeline");
                assert_eq!(v.len(), subjects.len());
            }
        }
    }

    /// One decision, one round trip.
    fn one(&self, raw: &mut redis::Connection, con: &mut Connection, subject: &str) {
        match self {
            Workload::Limiter(limiter) => {
                limiter.throttle(subject, 1).run(con).expect("throttle");
            }
            Workload::Floor(sha) => {
                let v: Vec<i64> = evalsha(sha, &format!("floor:{{{subject}}}"))
                    .query(raw)
                    .expect("floor");
                assert_eq!(v.len(), 5);
            }
        }
    }
}

fn load(con: &mut redis::Connection, script: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script)
        .query(con)
        .expect("SCRIPT LOAD")
}

fn main() {
    let server = common::server(&[]);
    common::load_scripts(&server);
    let mut raw = server.connection();
    let trivial = load(&mut raw, TRIVIAL);
    let floor = load(&mut raw, FLOOR);
    let calls = common::env_or("BENCH_CALLS", 20_000);
    let subjects: Vec<String> = (0..common::env_or("BENCH_SUBJECTS", 10_000))
        .map(|i| format!("user:{i}"))
        .collect();
    println!(
        "redis-server on 127.0.0.1:{}; median of {} rounds (BENCH_ROUNDS); {calls} calls a round over {} subjects",
        server.port(),
        common::rounds(),
        subjects.len()
    );
    let mut ctx = (raw, Connection::open(server.url()).expect("connect"));
    let ceiling_key = "bench:{trivial}";

    // --- Calls per second against the one-round-trip ceiling --------------------
    let depth = 16;
    let batches = calls / depth;
    let mut t = Table::new(
        "Decisions per second, one client, vs a bare EVALSHA of `return 1` (the 1-round-trip ceiling), interleaved rounds",
        &[
            "workload",
            "ceiling calls/s",
            "calls/s",
            "/ ceiling",
            "ceiling x16 calls/s",
            "x16 calls/s",
            "x16 / ceiling",
        ],
    );
    for (name, work) in workloads(&floor) {
        // The subjects in turn, one per call.
        let mut next = 0usize;
        let mut subject = || {
            next = (next + 1) % subjects.len();
            &subjects[next]
        };
        let (ceiling, ours, ratio) = paired(
            calls,
            &mut ctx,
            |(raw, _)| {
                for _ in 0..calls {
                    let v: i64 = evalsha(&trivial, ceiling_key).query(raw).expect("EVALSHA");
                    assert_eq!(v, 1);
                }
            },
            |(raw, con)| {
                for _ in 0..calls {
                    work.one(raw, con, subject());
                }
            },
        );
        let (ceiling16, ours16, ratio16) = paired(
            batches * depth,
            &mut ctx,
            |(raw, _)| common::raw_pipelines(raw, batches, depth, &evalsha(&trivial, ceiling_key)),
            |(raw, con)| {
                for _ in 0..batches {
                    let chunk: Vec<&String> = (0..depth).map(|_| subject()).collect();
                    work.batch(raw, con, &chunk);
                }
            },
        );
        t.row(vec![
            name.into(),
            num(ceiling),
            num(ours),
            format!("{ratio:.3}x"),
            num(ceiling16),
            num(ours16),
            format!("{ratio16:.3}x"),
        ]);
    }
    t.print();

    // --- Server microseconds per call -------------------------------------------
    let (raw, con) = &mut ctx;
    let n = calls.min(subjects.len()) / 500 * 500;
    let mut t = Table::new(
        &format!(
            "Server time per call (INFO commandstats usec/calls of EVALSHA over {n} calls in batches of 500; median and best of rounds)"
        ),
        &[
            "script",
            "server us/call",
            "vs `return 1`",
            "best round us/call",
            "best vs `return 1`",
        ],
    );
    let (mut trivial_us, mut trivial_best) = (f64::NAN, f64::NAN);
    let mut rows: Vec<(&str, Option<Workload>)> = vec![("`return 1` (ceiling)", None)];
    rows.extend(workloads(&floor).into_iter().map(|(n, w)| (n, Some(w))));
    for (name, work) in rows {
        let mut per_call: Vec<f64> = (0..common::rounds())
            .map(|_| {
                let mut stats = server.connection();
                common::reset_stats(&mut stats);
                for chunk in subjects[..n].chunks(500) {
                    match &work {
                        Some(w) => w.batch(raw, con, &chunk.iter().collect::<Vec<_>>()),
                        None => {
                            let mut pipe = redis::pipe();
                            for _ in chunk {
                                pipe.add_command(evalsha(&trivial, ceiling_key)).ignore();
                            }
                            let () = pipe.query(raw).expect("pipeline");
                        }
                    }
                }
                let (calls, usec) = common::command_stats(&mut stats, "evalsha");
                assert_eq!(calls as usize, n, "{name}: every call counted");
                usec as f64 / calls as f64
            })
            .collect();
        // The best round shows the script's own cost on a busy machine
        // (others' load only ever adds time).
        let best = per_call.iter().copied().fold(f64::INFINITY, f64::min);
        let us = median(&mut per_call);
        if work.is_none() {
            (trivial_us, trivial_best) = (us, best);
        }
        t.row(vec![
            name.into(),
            num(us),
            format!("{:.2}x", us / trivial_us),
            num(best),
            format!("{:.2}x", best / trivial_best),
        ]);
    }
    t.print();

    // --- Bytes per subject ------------------------------------------------------
    let mut t = Table::new(
        "Memory per subject (MEMORY USAGE of its one key, SAMPLES 0)",
        &["limiter", "state", "bytes", "encoding"],
    );
    let hour = Duration::from_secs(3600);
    let cases: [(&str, Limit, u64); 5] = [
        ("GCRA throttle", Limit::gcra(9, 100, hour), 1),
        ("sliding counter", Limit::sliding_counter(100, hour), 1),
        ("sliding log, limit 10", Limit::sliding_log(10, hour), 10),
        ("sliding log, limit 100", Limit::sliding_log(100, hour), 100),
        (
            "sliding log, limit 1000",
            Limit::sliding_log(1000, hour),
            1000,
        ),
    ];
    for (name, limit, taken) in cases {
        let limiter = RateLimiter::new(limit).expect("valid");
        let subject = "memory-probe";
        limiter.reset(subject).run(con).expect("DEL");
        limiter.throttle(subject, taken).run(con).expect("take");
        let key = limiter.key(subject).expect("key");
        let bytes: i64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .arg("SAMPLES")
            .arg(0)
            .query(raw)
            .expect("MEMORY USAGE");
        let encoding: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(&key)
            .query(raw)
            .expect("OBJECT ENCODING");
        let state = match limit {
            Limit::SlidingLog { .. } => format!("full: {taken} entries"),
            _ => "after one call".to_string(),
        };
        t.row(vec![name.into(), state, bytes.to_string(), encoding]);
        limiter.reset(subject).run(con).expect("DEL");
    }
    t.print();
}
