//! `cargo bench --bench analytics`: this crate's analytics side by side
//! with bitmapist (Python, PyPI) on the same server and the same data —
//! 1M users, 30 days of activity decaying after each user's signup day, in
//! two data sets: the ids in signup order (as auto-increment ids are: a
//! day's cohort is a run of ids) and shuffled (as hashed ids are: every
//! bitmap spreads over all ids) — answering the same questions: daily and
//! weekly actives, three
//! expressions, a 30-day daily retention table and a 12-week weekly one.
//! The answers are asserted equal; the table prints the median time of
//! each side, the median of the per-round speed-ups (the rounds of the two
//! sides interleaved, so that load from other processes hits both alike),
//! the fastest round of bitmapist over ours (a round the scheduler
//! preempted only gets slower, so on a shared machine this figure moves
//! least with other load: the ~1 ms weekly table swung from 5x to 12x in
//! its median between runs), and per side the round trips and the server's
//! CPU time of one answer (`total_reads_processed` and `used_cpu_*` of
//! `INFO`), and the memory per user-day. The two retention tables, the
//! questions with a goal (10x faster than bitmapist's in round trips and in
//! time), take three times as many rounds.
//!
//! Needs bitmapist importable by `python3`: `pip install --target
//! /opt/rp/bitmapist bitmapist` (the bench puts `$BITMAPIST_PATH`, default
//! `/opt/rp/bitmapist`, on `PYTHONPATH`). It starts its own redis-server on
//! 127.0.0.1 (a free port) and points bitmapist at it
//! (`benches/analytics/bitmapist_side.py`, which answers one question per
//! request on its stdin).
//!
//! The data is marked with this crate (`mark_many`, day / week / month
//! bitmaps) and then copied key by key (`COPY`) to bitmapist's key names:
//! both set bit `id` for user `id`, so the bitmaps are the same bytes; a
//! few events marked by bitmapist's own `mark_event` are checked byte for
//! byte against this crate's marks first.
//!
//! It then adds 1,000,000 distinct strings (`user<i>@example.com`) to one
//! day's HyperLogLog with `mark_strings`, and 1,000,000 others
//! (`member<i>@example.org`) to a unique event's with `mark_unique_strings`,
//! and prints the measured error of `count_uniques` and
//! `count_unique_approx` (Redis's HyperLogLog: 0.81 % standard error).
//!
//! Env: `BENCH_ROUNDS` (default 5), `BENCH_TABLE_ROUNDS` (the retention
//! tables' rounds, default three times `BENCH_ROUNDS`), `BENCH_USERS`
//! (default 1,000,000).

mod common;
#[path = "../tests/support/splitmix.rs"]
mod splitmix;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use common::{Table, env_or, median, num};
use redis_patterns::analytics::{Analytics, Cohort, Expr, Period};
use redis_patterns::{Connection, Op, Request};
use serde_json::Value;
use splitmix::SplitMix64;

const DAYS: i64 = 30;

fn start() -> NaiveDate {
    NaiveDate::from_ymd_opt(2024, 3, 1).unwrap()
}

fn day(i: i64) -> Period {
    Period::Day(start() + chrono::TimeDelta::days(i))
}

/// One event's marks of one day.
type Marks = Vec<(u64, chrono::DateTime<Utc>)>;

/// Marks the activity: each user signs up on a uniform day (`ordered`:
/// the ids in signup order, as an auto-increment id gives them; else
/// shuffled, as hashed ids are), is active that day and on each later day
/// with probability 0.6 × 0.85^(days since); an active user buys with
/// probability 0.1. Returns the user-days marked.
fn generate(con: &mut Connection, a: &Analytics, users: u64, ordered: bool) -> u64 {
    let mut rng = SplitMix64(2024);
    let mut per_day: Vec<[Marks; 3]> = (0..DAYS).map(|_| Default::default()).collect();
    for id in 0..users {
        let uniform = rng.unit();
        let signup = if ordered {
            (id * DAYS as u64 / users) as i64
        } else {
            (uniform * DAYS as f64) as i64
        };
        for d in signup..DAYS {
            let p = if d == signup {
                1.0
            } else {
                0.6 * 0.85f64.powi((d - signup) as i32)
            };
            if rng.unit() >= p {
                continue;
            }
            let date = start() + chrono::TimeDelta::days(d);
            let at = Utc
                .with_ymd_and_hms(date.year(), date.month(), date.day(), 12, 0, 0)
                .unwrap();
            per_day[d as usize][0].push((id, at));
            if d == signup {
                per_day[d as usize][2].push((id, at));
            }
            if rng.unit() < 0.1 {
                per_day[d as usize][1].push((id, at));
            }
        }
    }
    let mut user_days = 0;
    for events in &per_day {
        user_days += events[0].len() as u64;
        for (name, list) in ["active", "bought", "signup"].iter().zip(events) {
            for chunk in list.chunks(50_000) {
                a.mark_many(name, chunk).run(con).expect("mark");
            }
        }
    }
    user_days
}

/// bitmapist's key of one of this crate's periods.
fn bitmapist_key(event: &str, p: Period) -> String {
    match p {
        Period::Day(d) => format!("trackist_{event}_{}-{}-{}", d.year(), d.month(), d.day()),
        Period::Week(y, w) => format!("trackist_{event}_W{y}-{w}"),
        Period::Month(y, m) => format!("trackist_{event}_{y}-{m}"),
        _ => unreachable!("the bench marks day, week and month"),
    }
}

/// Every bitmap of `event`: the days, their ISO weeks and months.
fn periods() -> Vec<Period> {
    let mut out: Vec<Period> = (0..DAYS).map(day).collect();
    for i in 0..DAYS {
        let Period::Day(d) = day(i) else {
            unreachable!()
        };
        let w = d.iso_week();
        for p in [
            Period::Week(w.year(), w.week()),
            Period::Month(d.year(), d.month()),
        ] {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

fn used_memory(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory")
}

fn python(port: u16, mode: &str) -> Command {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/analytics/bitmapist_side.py"
    );
    let path = std::env::var("BITMAPIST_PATH").unwrap_or_else(|_| "/opt/rp/bitmapist".into());
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .arg(port.to_string())
        .arg(mode)
        .env("PYTHONPATH", path);
    cmd
}

const PIP: &str = "pip install --target /opt/rp/bitmapist bitmapist";

/// bitmapist_side.py serving one question per line of its stdin.
struct Bitmapist {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Bitmapist {
    fn start(port: u16) -> Self {
        let mut child = python(port, "serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut b = Bitmapist {
            child,
            stdin,
            stdout,
        };
        // Its connection (and the client's handshake) before any count.
        b.answer("daily");
        b.clean();
        b
    }

    fn ask(&mut self, request: &str) -> Value {
        writeln!(self.stdin, "{request}").expect("write to bitmapist_side.py");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        assert!(!line.is_empty(), "bitmapist side failed ({PIP})");
        serde_json::from_str(&line).expect("json")
    }

    /// One answer of `question` and its seconds (bitmapist's temporary
    /// keys are left until [`Bitmapist::clean`]).
    fn answer(&mut self, question: &str) -> (Value, f64) {
        let v = self.ask(&format!("run {question}"));
        (v["answer"].clone(), v["seconds"].as_f64().expect("seconds"))
    }

    fn clean(&mut self) {
        self.ask("clean");
    }
}

impl Drop for Bitmapist {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server's reads processed (one per round trip) and CPU seconds.
fn counters(raw: &mut redis::Connection) -> (u64, f64) {
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .arg("cpu")
        .query(raw)
        .unwrap();
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in INFO"))
    };
    (
        field("total_reads_processed") as u64,
        field("used_cpu_user") + field("used_cpu_sys"),
    )
}

/// The round trips and server CPU milliseconds of `f` (the INFO call
/// that reads the counters after it is one read).
fn cost<T>(raw: &mut redis::Connection, f: impl FnOnce() -> T) -> (T, u64, f64) {
    let (r0, c0) = counters(raw);
    let out = f();
    let (r1, c1) = counters(raw);
    (out, r1 - r0 - 1, (c1 - c0) * 1e3)
}

/// One question answered by both sides: asserted equal, then timed in
/// interleaved rounds (theirs first in even rounds, ours in odd ones).
struct Bench {
    raw: redis::Connection,
    con: Connection,
    theirs: Bitmapist,
    rounds: usize,
    table_rounds: usize,
    table: Table,
}

impl Bench {
    fn compare(
        &mut self,
        name: &str,
        question: &str,
        rounds: usize,
        mut ours: impl FnMut(&mut Connection) -> Value,
    ) {
        let ((answer, _), their_trips, their_cpu) =
            cost(&mut self.raw, || self.theirs.answer(question));
        self.theirs.clean();
        // A first call loads the scripts (EVALSHA, NOSCRIPT, EVAL).
        ours(&mut self.con);
        let con = &mut self.con;
        let (mine, our_trips, our_cpu) = cost(&mut self.raw, || ours(con));
        assert_eq!(mine, answer, "{name}: ours and bitmapist's differ");
        let (mut t_ours, mut t_theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let mut mine = |con: &mut Connection| {
                let t = Instant::now();
                ours(con);
                t.elapsed().as_secs_f64()
            };
            let (o, b) = if round % 2 == 0 {
                let b = self.theirs.answer(question).1;
                (mine(&mut self.con), b)
            } else {
                let o = mine(&mut self.con);
                (o, self.theirs.answer(question).1)
            };
            self.theirs.clean();
            t_ours.push(o);
            t_theirs.push(b);
            ratios.push(b / o);
        }
        let fastest = |t: &[f64]| t.iter().copied().fold(f64::INFINITY, f64::min);
        let fastest = fastest(&t_theirs) / fastest(&t_ours);
        self.table.row(vec![
            name.into(),
            rounds.to_string(),
            num(median(&mut t_ours) * 1e3),
            num(median(&mut t_theirs) * 1e3),
            format!("{:.2}x", median(&mut ratios)),
            format!("{fastest:.2}x"),
            format!("{our_trips} / {their_trips}"),
            format!("{} / {}", num(our_cpu), num(their_cpu)),
        ]);
    }
}

/// The table as bitmapist prints it: per row the size and the cells.
fn as_json(t: &Cohort) -> Value {
    Value::Array(
        t.sizes
            .iter()
            .zip(&t.counts)
            .map(|(s, c)| serde_json::json!({"size": s, "cells": c}))
            .collect(),
    )
}

fn main() {
    let rounds = common::rounds();
    let users: u64 = env_or("BENCH_USERS", 1_000_000);
    let server = common::server(&[]);
    let mut raw = server.connection();
    let mut con = Connection::open(server.url()).expect("connect");
    let a = Analytics::builder().tag("b").build().expect("analytics");

    // bitmapist's own marks against this crate's, byte for byte.
    let sample = python(server.port(), "sample").status().expect("python3");
    assert!(sample.success(), "bitmapist side failed ({PIP})");
    for (id, d) in [(3u64, 0i64), (77, 0), (77, 1), (999_999, 9), (12_345, 20)] {
        let Period::Day(date) = day(d) else {
            unreachable!()
        };
        let at = Utc
            .with_ymd_and_hms(date.year(), date.month(), date.day(), 12, 0, 0)
            .unwrap();
        a.mark("sample", id, &at).run(&mut con).expect("mark");
    }
    for p in periods()
        .into_iter()
        .filter(|p| p.start().unwrap() <= day(20).start().unwrap())
    {
        let ours: Option<Vec<u8>> = redis::cmd("GET")
            .arg(a.key("sample", p))
            .query(&mut raw)
            .unwrap();
        let theirs: Option<Vec<u8>> = redis::cmd("GET")
            .arg(bitmapist_key("sample", p))
            .query(&mut raw)
            .unwrap();
        assert_eq!(
            ours, theirs,
            "bitmapist's mark_event and ours differ in {p}"
        );
    }

    let mut bench = Bench {
        theirs: Bitmapist::start(server.port()),
        raw,
        con,
        rounds,
        table_rounds: env_or("BENCH_TABLE_ROUNDS", 3 * rounds),
        table: Table::new("", &[]),
    };
    for (ids, ordered) in [
        ("ids in signup order (auto-increment)", true),
        ("ids shuffled (hashed)", false),
    ] {
        dataset(&mut bench, &a, users, ids, ordered);
    }
    hll_error(&mut bench.con);
}

/// One data set marked (`FLUSHALL` first), copied to bitmapist's keys and
/// every question compared; prints the table and the memory per user-day.
fn dataset(bench: &mut Bench, a: &Analytics, users: u64, ids: &str, ordered: bool) {
    let _: () = redis::cmd("FLUSHALL").query(&mut bench.raw).unwrap();
    let before: u64 = used_memory(&mut bench.raw);
    let t = Instant::now();
    let user_days = generate(&mut bench.con, a, users, ordered);
    let marked = t.elapsed().as_secs_f64();
    let after: u64 = used_memory(&mut bench.raw);
    let mut day_bytes = 0u64;
    for event in ["active", "bought", "signup"] {
        for p in periods() {
            let _: i64 = redis::cmd("COPY")
                .arg(a.key(event, p))
                .arg(bitmapist_key(event, p))
                .query(&mut bench.raw)
                .unwrap();
            if matches!(p, Period::Day(_)) && event == "active" {
                let n: u64 = redis::cmd("STRLEN")
                    .arg(a.key(event, p))
                    .query(&mut bench.raw)
                    .unwrap();
                day_bytes += n;
            }
        }
    }
    bench.table = Table::new(
        &format!(
            "analytics vs bitmapist: {users} users, {ids}, {DAYS} days, {user_days} active user-days (medians of the interleaved rounds; speed-up: the median of the rounds' ratios; fastest: bitmapist's fastest round over ours)"
        ),
        &[
            "question",
            "rounds",
            "ours ms",
            "bitmapist ms",
            "speed-up",
            "fastest",
            "round trips (ours / bitmapist)",
            "server CPU ms (ours / bitmapist)",
        ],
    );
    questions(bench, a);
    bench.table.print();
    println!(
        "every answer equal to bitmapist's. marking {user_days} active user-days (with signups and purchases) took {marked:.1} s with mark_many (day, week and month bitmaps)"
    );
    println!(
        "memory: the day bitmaps average {day_bytes_per} bytes (1 bit per user up to the largest id active that day): {:.3} bytes per active user-day for the day bitmaps; all of this crate's bitmaps (day, week, month of 3 events): {} bytes, {:.3} bytes per active user-day",
        day_bytes as f64 / user_days as f64,
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / user_days as f64,
        day_bytes_per = day_bytes / DAYS as u64,
    );
}

/// Every question, each side by side with bitmapist's answer.
fn questions(bench: &mut Bench, a: &Analytics) {
    let (rounds, tables) = (bench.rounds, bench.table_rounds);
    let count = |event: &str, periods: &[Period]| {
        Op::join(periods.iter().map(|p| a.count(event, *p)).collect())
    };
    let days: Vec<Period> = (0..DAYS).map(day).collect();
    bench.compare("daily actives (30 days)", "daily", rounds, |con| {
        serde_json::json!(count("active", &days).run(con).unwrap())
    });
    let weeks: Vec<Period> = periods()
        .into_iter()
        .filter(|p| matches!(p, Period::Week(..)))
        .collect();
    bench.compare("weekly actives", "weekly", rounds, |con| {
        serde_json::json!(count("active", &weeks).run(con).unwrap())
    });
    let ev = |name: &str, i| Expr::event(name, day(i));
    let exprs = [
        ev("active", 0).and(ev("bought", 1)),
        Expr::Or((0..7).map(|i| ev("active", i)).collect()).and(ev("bought", 9)),
        Expr::And(vec![ev("signup", 0), ev("active", 7), ev("bought", 14)]),
    ];
    bench.compare("three expressions (counts)", "expressions", rounds, |con| {
        let counts = exprs.iter().map(|e| a.query(e.clone()).count()).collect();
        serde_json::json!(Op::join(counts).run(con).unwrap())
    });
    bench.compare(
        "30-day daily retention table",
        "daily_table",
        tables,
        |con| {
            as_json(
                &a.cohort("signup", "active", day(0), 30, 30)
                    .run(con)
                    .unwrap(),
            )
        },
    );
    let Period::Day(first) = day(0) else {
        unreachable!()
    };
    let w = first.iso_week();
    bench.compare(
        "12-week weekly retention table",
        "weekly_table",
        tables,
        |con| {
            let week = Period::Week(w.year(), w.week());
            as_json(&a.cohort("signup", "active", week, 12, 12).run(con).unwrap())
        },
    );
}

/// Adds `n` distinct strings on `con` by `add` of each chunk of 100,000
/// ids, then counts them by `estimate`: the seconds the adds took, the
/// estimate, and its error in percent.
fn hll_run(
    con: &mut Connection,
    n: u64,
    mut add: impl FnMut(&mut Connection, std::ops::Range<u64>),
    estimate: impl FnOnce(&mut Connection) -> u64,
) -> (f64, u64, f64) {
    let t = Instant::now();
    for start in (0..n).step_by(100_000) {
        add(con, start..start + 100_000);
    }
    let added = t.elapsed().as_secs_f64();
    let est = estimate(con);
    (added, est, (est as f64 - n as f64) / n as f64 * 100.0)
}

/// The HyperLogLog's measured error on 1,000,000 distinct strings.
fn hll_error(con: &mut Connection) {
    let a = Analytics::builder()
        .tag("hll")
        .granularities(&[redis_patterns::analytics::Granularity::Day])
        .build()
        .expect("analytics");
    let at = Utc.with_ymd_and_hms(2024, 3, 1, 12, 0, 0).unwrap();
    let n = 1_000_000u64;
    let (added, est, error) = hll_run(
        con,
        n,
        |con, ids| {
            let chunk: Vec<(String, chrono::DateTime<Utc>)> =
                ids.map(|i| (format!("user{i}@example.com"), at)).collect();
            a.mark_strings("signup", &chunk)
                .run(con)
                .expect("mark_strings");
        },
        |con| {
            a.count_uniques("signup", day(0))
                .run(con)
                .expect("count_uniques")
        },
    );
    println!(
        "HyperLogLog: {n} distinct strings added in {added:.1} s (mark_strings, 5,000 per analytics.mark_hll call); count_uniques {est}: measured error {error:+.3} % (standard error 0.81 %)"
    );
    let (added, est, error) = hll_run(
        con,
        n,
        |con, ids| {
            let chunk: Vec<String> = ids.map(|i| format!("member{i}@example.org")).collect();
            a.mark_unique_strings("member", &chunk)
                .run(con)
                .expect("mark_unique_strings");
        },
        |con| {
            a.count_unique_approx("member")
                .run(con)
                .expect("count_unique_approx")
        },
    );
    println!(
        "HyperLogLog of a unique event: {n} distinct strings added in {added:.1} s (mark_unique_strings); count_unique_approx {est}: measured error {error:+.3} %"
    );
}
