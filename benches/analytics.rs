//! `cargo bench --bench analytics`: this crate's analytics side by side
//! with bitmapist (Python, PyPI) on the same server and the same data —
//! 1M users, 30 days of activity decaying after each user's signup day —
//! answering the same questions: daily and weekly actives, three
//! expressions, a 30-day daily retention table and a 12-week weekly one.
//! The answers are asserted equal; the table prints the median time of
//! each and the ratio, the round trips of the cohort tables, and the
//! memory per user-day.
//!
//! Needs bitmapist importable by `python3`: `pip install --target
//! /opt/rp/bitmapist bitmapist` (the bench puts `$BITMAPIST_PATH`, default
//! `/opt/rp/bitmapist`, on `PYTHONPATH`). It starts its own redis-server on
//! 127.0.0.1 (a free port) and points bitmapist at it.
//!
//! The data is marked with this crate (`mark_many`, day / week / month
//! bitmaps) and then copied key by key (`COPY`) to bitmapist's key names:
//! both set bit `id` for user `id`, so the bitmaps are the same bytes; a
//! few events marked by bitmapist's own `mark_event` are checked byte for
//! byte against this crate's marks first.
//!
//! It then adds 1,000,000 distinct strings (`user<i>@example.com`) to one
//! day's HyperLogLog with `mark_strings` and prints `count_uniques`'s
//! measured error (Redis's HyperLogLog: 0.81 % standard error).
//!
//! Env: `BENCH_ROUNDS` (default 5), `BENCH_USERS` (default 1,000,000).

mod common;

use std::process::Command;
use std::time::Instant;

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use common::{Table, env_or, median, num, ratio};
use redis_patterns::analytics::{Analytics, Cohort, Expr, Period};
use redis_patterns::{Connection, Request};
use serde_json::Value;

const DAYS: i64 = 30;

fn start() -> NaiveDate {
    NaiveDate::from_ymd_opt(2024, 3, 1).unwrap()
}

fn day(i: i64) -> Period {
    Period::Day(start() + chrono::TimeDelta::days(i))
}

/// A deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One event's marks of one day.
type Marks = Vec<(u64, chrono::DateTime<Utc>)>;

/// Marks the activity: each user signs up on a uniform day, is active that
/// day and on each later day with probability 0.6 × 0.85^(days since);
/// an active user buys with probability 0.1. Returns the user-days marked.
fn generate(con: &mut Connection, a: &Analytics, users: u64) -> u64 {
    let mut rng = Rng(2024);
    let mut per_day: Vec<[Marks; 3]> = (0..DAYS).map(|_| Default::default()).collect();
    for id in 0..users {
        let signup = (rng.unit() * DAYS as f64) as i64;
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

fn python(port: u16, rounds: usize, mode: &str) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/analytics/bitmapist_side.py"
    );
    let path = std::env::var("BITMAPIST_PATH").unwrap_or_else(|_| "/opt/rp/bitmapist".into());
    let out = Command::new("python3")
        .arg(script)
        .arg(port.to_string())
        .arg(rounds.to_string())
        .arg(mode)
        .env("PYTHONPATH", path)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "bitmapist side failed (pip install --target /opt/rp/bitmapist bitmapist):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The median seconds of `rounds` runs of `f`, and its last answer.
fn timed<T>(rounds: usize, mut f: impl FnMut() -> T) -> (T, f64) {
    let mut times = Vec::new();
    let mut out = None;
    for _ in 0..rounds {
        let t = Instant::now();
        out = Some(f());
        times.push(t.elapsed().as_secs_f64());
    }
    (out.expect("one round"), median(&mut times))
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
    python(server.port(), 1, "sample");
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

    let before: u64 = used_memory(&mut raw);
    let t = Instant::now();
    let user_days = generate(&mut con, &a, users);
    let marked = t.elapsed().as_secs_f64();
    let after: u64 = used_memory(&mut raw);
    let mut day_bytes = 0u64;
    for event in ["active", "bought", "signup"] {
        for p in periods() {
            let _: i64 = redis::cmd("COPY")
                .arg(a.key(event, p))
                .arg(bitmapist_key(event, p))
                .query(&mut raw)
                .unwrap();
            if matches!(p, Period::Day(_)) && event == "active" {
                let n: u64 = redis::cmd("STRLEN")
                    .arg(a.key(event, p))
                    .query(&mut raw)
                    .unwrap();
                day_bytes += n;
            }
        }
    }

    let theirs: Value = serde_json::from_str(&python(server.port(), rounds, "run")).expect("json");
    let mut table = Table::new(
        &format!(
            "analytics vs bitmapist: {users} users, {DAYS} days, {user_days} active user-days (median of {rounds})"
        ),
        &[
            "question",
            "ours ms",
            "bitmapist ms",
            "speed-up",
            "round trips (ours / bitmapist)",
        ],
    );
    let mut row = |name: &str, ours: f64, key: &str, trips: usize| {
        let b = theirs[key]["seconds"].as_f64().unwrap();
        let calls = theirs[key]["calls"].as_u64().unwrap();
        table.row(vec![
            name.into(),
            num(ours * 1e3),
            num(b * 1e3),
            ratio(b, ours),
            format!("{trips} / {calls}"),
        ]);
    };

    let (daily, t_daily) = timed(rounds, || {
        let mut batch = redis_patterns::Batch::new();
        for i in 0..DAYS {
            let k = a.key("active", day(i));
            batch.add(&k, redis::cmd("BITCOUNT").arg(&k).clone());
        }
        let v: Vec<u64> = redis_patterns::Op::send(batch, |r| r.all())
            .run(&mut con)
            .unwrap();
        v
    });
    assert_eq!(
        serde_json::json!(daily),
        theirs["daily"]["answer"],
        "daily actives"
    );
    row("daily actives (30 days)", t_daily, "daily", 1);

    let weeks: Vec<Period> = periods()
        .into_iter()
        .filter(|p| matches!(p, Period::Week(..)))
        .collect();
    let (weekly, t_weekly) = timed(rounds, || {
        weeks
            .iter()
            .map(|w| a.count("active", *w).run(&mut con).unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(
        serde_json::json!(weekly),
        theirs["weekly"]["answer"],
        "weekly actives"
    );
    row("weekly actives", t_weekly, "weekly", weeks.len());

    let ev = |name: &str, i| Expr::event(name, day(i));
    let exprs = [
        ev("active", 0).and(ev("bought", 1)),
        Expr::Or((0..7).map(|i| ev("active", i)).collect()).and(ev("bought", 9)),
        Expr::And(vec![ev("signup", 0), ev("active", 7), ev("bought", 14)]),
    ];
    let (counts, t_expr) = timed(rounds, || {
        exprs
            .iter()
            .map(|e| a.query(e.clone()).count().run(&mut con).unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(
        serde_json::json!(counts),
        theirs["expressions"]["answer"],
        "expressions"
    );
    row("three expressions (counts)", t_expr, "expressions", 3);

    let (daily_t, t_dt) = timed(rounds, || {
        a.cohort("signup", "active", day(0), 30, 30)
            .run(&mut con)
            .unwrap()
    });
    assert_eq!(
        as_json(&daily_t),
        theirs["daily_table"]["answer"],
        "daily retention table"
    );
    row("30-day daily retention table", t_dt, "daily_table", 1);

    let Period::Day(first) = day(0) else {
        unreachable!()
    };
    let w = first.iso_week();
    let (weekly_t, t_wt) = timed(rounds, || {
        a.cohort("signup", "active", Period::Week(w.year(), w.week()), 12, 12)
            .run(&mut con)
            .unwrap()
    });
    assert_eq!(
        as_json(&weekly_t),
        theirs["weekly_table"]["answer"],
        "weekly retention table"
    );
    row("12-week weekly retention table", t_wt, "weekly_table", 1);
    table.print();

    hll_error(&mut con);
    println!(
        "every answer equal to bitmapist's. marking {user_days} active user-days (with signups and purchases) took {marked:.1} s with mark_many (day, week and month bitmaps)"
    );
    println!(
        "memory: a day bitmap of {users} users is {day_bytes_per} bytes (1 bit per user up to the largest id, whoever is active): {:.3} bytes per active user-day for the day bitmaps; all of this crate's bitmaps (day, week, month of 3 events): {} bytes, {:.3} bytes per active user-day",
        day_bytes as f64 / user_days as f64,
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / user_days as f64,
        day_bytes_per = day_bytes / DAYS as u64,
    );
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
    let t = Instant::now();
    for start in (0..n).step_by(100_000) {
        let chunk: Vec<(String, chrono::DateTime<Utc>)> = (start..start + 100_000)
            .map(|i| (format!("user{i}@example.com"), at))
            .collect();
        a.mark_strings("signup", &chunk)
            .run(con)
            .expect("mark_strings");
    }
    let added = t.elapsed().as_secs_f64();
    let est = a
        .count_uniques("signup", day(0))
        .run(con)
        .expect("count_uniques");
    let error = (est as f64 - n as f64) / n as f64 * 100.0;
    println!(
        "HyperLogLog: {n} distinct strings added in {added:.1} s (mark_strings, 5,000 per analytics.mark_hll call); count_uniques {est}: measured error {error:+.3} % (standard error 0.81 %)"
    );
}
