//! `analytics`: bitmap analytics against a real redis-server and a real
//! cluster, every test body through both drivers: marks at every
//! granularity, expressions against a set model on both `BITOP` paths,
//! cohort tables, the id bound and a failing expression (`DEBUG DIGEST`).

mod bitmap;
#[path = "support/splitmix.rs"]
mod splitmix;
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use bitmap::{day, invalid_argument, script_refused, uid_out_of_range};
use chrono::{DateTime, TimeZone, Utc};
use redis_patterns::analytics::{Analytics, Expr, Granularity, Period};
use redis_patterns::core::Caps;
use redis_patterns::{ErrorKind, Retention, scripts};
use splitmix::SplitMix64;
use support::Driver;

fn utc(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
}

/// Analytics with the defaults and its own tag, `<letter><driver name>`.
fn tagged(letter: &str, d: &Driver) -> Analytics {
    Analytics::builder()
        .tag(&format!("{letter}{}", d.name()))
        .build()
        .unwrap()
}

fn caps_of(d: &mut Driver) -> Caps {
    d.run(redis_patterns::core::Caps::read()).expect("caps")
}

fn set_caps(d: &mut Driver, caps: Caps) {
    match d {
        Driver::Sync(con) => con.set_caps(caps),
        Driver::Async(con, _) => con.set_caps(caps),
    }
}

fn keys(d: &mut Driver, pattern: &str) -> Vec<String> {
    let mut k: Vec<String> = d.cmd(pattern, redis::cmd("KEYS").arg(pattern));
    k.sort();
    k
}

#[test]
fn a_mark_sets_every_configured_period_with_its_expiry() {
    support::on_server(|d| {
        let a = Analytics::builder()
            .prefix(redis_patterns::keys::Prefix::new(&format!("an{}:", d.name())).unwrap())
            .granularities(&Granularity::ALL)
            .retention(Granularity::Hour, Retention::days(1))
            .retention(Granularity::Day, Retention::days(30))
            .build()
            .unwrap();
        // Far in the future, so that the expiries have not passed.
        let at = utc(2099, 12, 28, 23);
        assert_eq!(d.run(a.mark("login", 7, &at)).unwrap(), Some(true));
        assert_eq!(d.run(a.mark("login", 7, &at)).unwrap(), Some(false));
        assert_eq!(
            d.run(a.mark("login", 9, &utc(2099, 12, 28, 5))).unwrap(),
            Some(true)
        );
        let p = |l: &str| l.parse::<Period>().unwrap();
        let base = format!("an{}:{{login}}", d.name());
        assert_eq!(
            keys(d, &format!("{base}:*")),
            [
                "D:2099-12-28",
                "H:2099-12-28T05",
                "H:2099-12-28T23",
                "M:2099-12",
                "W:2099-W53",
                "Y:2099"
            ]
            .map(|l| format!("{base}:{l}"))
        );
        assert_eq!(
            a.key("login", p("W:2099-W53")),
            format!("{base}:W:2099-W53")
        );
        assert_eq!(d.run(a.count("login", p("D:2099-12-28"))).unwrap(), 2);
        assert_eq!(d.run(a.count("login", p("H:2099-12-28T23"))).unwrap(), 1);
        assert!(d.run(a.contains("login", p("Y:2099"), 9)).unwrap());
        assert!(!d.run(a.contains("login", p("Y:2099"), 8)).unwrap());
        // The hour expires a day after it ends, the day 30 days after; the
        // week, month and year are kept.
        let expiretime = |d: &mut Driver, l: &str| -> i64 {
            let k = format!("{base}:{l}");
            d.cmd(&k, redis::cmd("EXPIRETIME").arg(&k))
        };
        assert_eq!(
            expiretime(d, "H:2099-12-28T23"),
            utc(2099, 12, 30, 0).timestamp()
        );
        assert_eq!(
            expiretime(d, "D:2099-12-28"),
            utc(2100, 1, 28, 0).timestamp()
        );
        assert_eq!(expiretime(d, "M:2099-12"), -1);
        // A unique event: one bitmap, no time.
        assert_eq!(d.run(a.mark_unique("signup", 3)).unwrap(), Some(true));
        assert_eq!(d.run(a.mark_unique("signup", 3)).unwrap(), Some(false));
        assert_eq!(d.run(a.count_unique("signup")).unwrap(), 1);
        assert_eq!(
            a.unique_key("signup"),
            format!("an{}:{{signup}}:U", d.name())
        );
    });
}

#[test]
fn periods_are_local_time_in_the_zone() {
    support::on_server(|d| {
        let ny = chrono_tz::America::New_York;
        let a = Analytics::builder()
            .tag(&format!("tz{}", d.name()))
            .granularities(&[Granularity::Hour, Granularity::Day])
            .retention(Granularity::Day, Retention::After(Duration::ZERO))
            .time_zone(ny)
            .build()
            .unwrap();
        // 2099-03-08 03:30 UTC is 22:30 on the 7th in New York (EST).
        let at = Utc.with_ymd_and_hms(2099, 3, 8, 3, 30, 0).unwrap();
        d.run(a.mark("visit", 1, &at)).unwrap();
        let local_day = Period::Day(day(2099, 3, 7));
        assert_eq!(d.run(a.count("visit", local_day)).unwrap(), 1);
        assert_eq!(
            d.run(a.count("visit", Period::Day(day(2099, 3, 8))))
                .unwrap(),
            0
        );
        assert_eq!(
            d.run(a.count("visit", Period::Hour(day(2099, 3, 7), 22)))
                .unwrap(),
            1
        );
        // The day expires at its end, local midnight: 05:00 UTC.
        let k = a.key("visit", local_day);
        let at: i64 = d.cmd(&k, redis::cmd("EXPIRETIME").arg(&k));
        assert_eq!(
            at,
            Utc.with_ymd_and_hms(2099, 3, 8, 5, 0, 0)
                .unwrap()
                .timestamp()
        );
    });
}

#[test]
fn ids_above_the_bound_are_refused_before_anything_is_written() {
    support::on_server_with_connection(|d, con| {
        let a = Analytics::builder()
            .tag(&format!("b{}", d.name()))
            .max_id(1000)
            .build()
            .unwrap();
        let before = support::dbsize(con);
        assert!(uid_out_of_range(&d.run(a.mark(
            "e",
            1001,
            &utc(2024, 1, 1, 0)
        ))));
        assert!(uid_out_of_range(&d.run(a.mark_unique("e", 5000))));
        let many = [(5, utc(2024, 1, 1, 0)), (1001, utc(2024, 1, 2, 0))];
        assert!(uid_out_of_range(&d.run(a.mark_many("e", &many))));
        assert!(invalid_argument(&d.run(a.mark(
            "a b",
            1,
            &utc(2024, 1, 1, 0)
        ))));
        // The script refuses too, for a caller that skips the Rust checks.
        let k = a.key("e", Period::Day(day(2024, 1, 1)));
        let raw = scripts::analytics::mark(&[k.as_str()], 1000, &[0, 4_000_000_000]).unwrap();
        assert!(uid_out_of_range(&d.run(raw)));
        assert_eq!(support::dbsize(con), before, "nothing written");
        assert!(Analytics::builder().max_id(1 << 33).build().is_err());
        assert!(Analytics::builder().granularities(&[]).build().is_err());
    });
}

#[test]
fn mark_many_groups_by_period_in_one_batch() {
    support::on_server(|d| {
        let a = tagged("m", d);
        let mut events: Vec<(u64, DateTime<Utc>)> = Vec::new();
        for id in 0..12_000u64 {
            events.push((id, utc(2024, 5, 1 + (id % 3) as u32, (id % 24) as u32)));
        }
        assert_eq!(d.run(a.mark_many("act", &events)).unwrap(), Some(12_000));
        assert_eq!(d.run(a.mark_many("act", &events[..10])).unwrap(), Some(0));
        assert_eq!(
            d.run(a.count("act", Period::Day(day(2024, 5, 1)))).unwrap(),
            4_000
        );
        assert_eq!(
            d.run(a.count("act", Period::Month(2024, 5))).unwrap(),
            12_000
        );
        assert_eq!(
            d.run(a.count("act", Period::Week(2024, 18))).unwrap(),
            12_000
        );
    });
}

/// Random users of three events over four days, and the model's sets.
fn random_data(d: &mut Driver, a: &Analytics, seed: u64) -> Vec<(String, Period, BTreeSet<u64>)> {
    let mut rng = SplitMix64(seed);
    let mut out = Vec::new();
    let mut events = Vec::new();
    for ev in ["active", "bought", "churned"] {
        for dd in 1..=4 {
            let p = Period::Day(day(2024, 3, dd));
            let mut set = BTreeSet::new();
            for _ in 0..300 {
                let id = rng.below(5_000) as u64;
                set.insert(id);
                events.push((id, utc(2024, 3, dd, 12)));
            }
            d.run(a.mark_many(ev, &events)).unwrap();
            events.clear();
            out.push((ev.to_string(), p, set));
        }
    }
    out
}

fn set_of(data: &[(String, Period, BTreeSet<u64>)], ev: &str, p: Period) -> BTreeSet<u64> {
    data.iter()
        .find(|(e, q, _)| e == ev && *q == p)
        .map(|(_, _, s)| s.clone())
        .unwrap_or_default()
}

/// The model's answer to an expression.
fn model(data: &[(String, Period, BTreeSet<u64>)], e: &Expr) -> BTreeSet<u64> {
    let all = |v: &[Expr]| v.iter().map(|x| model(data, x)).collect::<Vec<_>>();
    match e {
        Expr::Event { event, period } => set_of(data, event, period.unwrap()),
        Expr::Or(v) => all(v).into_iter().flatten().collect(),
        Expr::Xor(v) => all(v).into_iter().fold(BTreeSet::new(), |acc, s| {
            acc.symmetric_difference(&s).copied().collect()
        }),
        Expr::And(v) => {
            let (neg, pos): (Vec<&Expr>, Vec<&Expr>) =
                v.iter().partition(|x| matches!(x, Expr::Not(_)));
            let mut out = pos
                .iter()
                .map(|x| model(data, x))
                .reduce(|a, b| a.intersection(&b).copied().collect())
                .unwrap();
            for n in neg {
                let Expr::Not(inner) = n else { unreachable!() };
                out = out.difference(&model(data, inner)).copied().collect();
            }
            out
        }
        Expr::Diff(a, rest) => {
            let minus: BTreeSet<u64> = all(rest).into_iter().flatten().collect();
            model(data, a).difference(&minus).copied().collect()
        }
        Expr::One(v) | Expr::AtLeast(_, v) => {
            let sets = all(v);
            let every: BTreeSet<u64> = sets.iter().flatten().copied().collect();
            every
                .into_iter()
                .filter(|id| {
                    let n = sets.iter().filter(|s| s.contains(id)).count();
                    match e {
                        Expr::One(_) => n == 1,
                        Expr::AtLeast(k, _) => n >= *k,
                        _ => unreachable!(),
                    }
                })
                .collect()
        }
        Expr::Not(_) => unreachable!(),
    }
}

fn expressions() -> Vec<Expr> {
    let e = |ev: &str, dd| Expr::event(ev, Period::Day(day(2024, 3, dd)));
    vec![
        e("active", 1),
        e("active", 1).and(e("bought", 2)).and_not(e("churned", 4)),
        e("active", 1).or(e("active", 2)).or(e("active", 3)),
        e("active", 1).xor(e("bought", 1)),
        Expr::And(vec![e("active", 2), e("bought", 2).or(e("bought", 3))]),
        Expr::Diff(
            Box::new(e("active", 1).or(e("bought", 1))),
            vec![e("churned", 1), e("churned", 2)],
        ),
        Expr::And(vec![
            Expr::Not(Box::new(e("churned", 3))),
            e("active", 3).or(e("active", 4)),
            Expr::Not(Box::new(e("churned", 4))),
        ]),
        Expr::One(vec![
            e("active", 1),
            e("active", 2),
            e("active", 3),
            e("active", 4),
        ]),
        Expr::at_least(3, (1..=4).map(|dd| e("active", dd)).collect()),
        Expr::at_least(
            2,
            vec![
                e("active", 1),
                e("bought", 1).and(e("active", 2)),
                e("churned", 1),
            ],
        ),
        // An event nobody did: an empty result.
        e("never", 1).and(e("active", 1)),
    ]
}

/// Every expression's count, some memberships and all its members (paged)
/// equal the model's.
fn answers_match(d: &mut Driver, a: &Analytics, data: &[(String, Period, BTreeSet<u64>)]) {
    for e in expressions() {
        let want = model(data, &e);
        let q = a.query(e.clone());
        assert_eq!(d.run(q.count()).unwrap(), want.len() as u64, "count of {e}");
        for id in [0, 1, 17, 4999, 5000, 1 << 30] {
            assert_eq!(
                d.run(q.contains(id)).unwrap(),
                want.contains(&id),
                "{id} in {e}"
            );
        }
        let mut got = Vec::new();
        let mut from = 0;
        loop {
            let page = d.run(q.members(from, 97)).unwrap();
            assert!(page.ids.len() <= 97);
            got.extend(page.ids);
            match page.next {
                Some(n) => from = n,
                None => break,
            }
        }
        assert_eq!(
            got,
            want.iter().copied().collect::<Vec<_>>(),
            "members of {e}"
        );
    }
}

#[test]
fn expressions_equal_the_model_on_both_bitop_paths() {
    support::on_server(|d| {
        let a = tagged("x", d);
        let data = random_data(d, &a, 42);
        let detected = caps_of(d);
        answers_match(d, &a, &data);
        set_caps(d, detected.without("bitop_diff"));
        answers_match(d, &a, &data);
        set_caps(d, detected);
        let left = keys(d, &format!("an:{{x{}}}:tmp:*", d.name()));
        assert!(left.is_empty(), "temporary keys left: {left:?}");
        // Refused before sending: NOT alone, an empty AND, at least 0.
        let e = Expr::event("active", Period::Day(day(2024, 3, 1)));
        for bad in [
            Expr::Not(Box::new(e.clone())),
            Expr::And(vec![]),
            Expr::at_least(0, vec![e.clone()]),
        ] {
            assert!(invalid_argument(&d.run(a.query(bad).count())));
        }
        assert!(invalid_argument(&d.run(a.query(e.clone()).members(0, 0))));
    });
}

#[test]
fn a_cached_result_lives_for_its_ttl() {
    support::on_server(|d| {
        let a = tagged("c", d);
        let p = Period::Day(day(2024, 3, 1));
        d.run(a.mark("open", 1, &utc(2024, 3, 1, 1))).unwrap();
        let q = a
            .query(Expr::event("open", p))
            .cache("open-today", Duration::from_secs(60));
        assert_eq!(d.run(q.count()).unwrap(), 1);
        d.run(a.mark("open", 2, &utc(2024, 3, 1, 2))).unwrap();
        assert_eq!(d.run(q.count()).unwrap(), 1, "answered from the cache");
        let k = format!("an:{{c{}}}:cache:open-today", d.name());
        let pttl: i64 = d.cmd(&k, redis::cmd("PTTL").arg(&k));
        assert!(pttl > 0 && pttl <= 60_000, "{pttl}");
        assert_eq!(d.run(a.query(Expr::event("open", p)).count()).unwrap(), 2);
        let bad = a.query(Expr::event("open", p)).cache("x", Duration::ZERO);
        assert!(invalid_argument(&d.run(bad.count())));
    });
}

/// The model's cohort table.
fn model_cohort(
    data: &[(String, Period, BTreeSet<u64>)],
    first: Period,
    rows: usize,
    cols: usize,
) -> (Vec<u64>, Vec<Vec<Option<u64>>>) {
    let (mut sizes, mut counts) = (Vec::new(), Vec::new());
    let periods = rows + cols - 1;
    for i in 0..rows {
        let c = set_of(data, "active", first.offset(i as i64).unwrap());
        sizes.push(c.len() as u64);
        let mut row = Vec::new();
        for k in 0..cols.min(periods - i) {
            let r = set_of(data, "bought", first.offset((i + k) as i64).unwrap());
            let both = c.intersection(&r).count() as u64;
            row.push((!c.is_empty() && !r.is_empty()).then_some(both));
        }
        counts.push(row);
    }
    (sizes, counts)
}

#[test]
fn cohort_tables_equal_the_model() {
    support::on_server(|d| {
        let a = tagged("h", d);
        let data = random_data(d, &a, 7);
        let first = Period::Day(day(2024, 2, 29));
        let t = d.run(a.cohort("active", "bought", first, 5, 3)).unwrap();
        let (sizes, counts) = model_cohort(&data, first, 5, 3);
        assert_eq!(t.sizes, sizes);
        assert_eq!(t.counts, counts);
        assert_eq!(t.periods[1], "D:2024-03-01");
        assert_eq!(t.sizes[0], 0, "nobody on the 29th");
        let pct = t.percent(1, 1).unwrap();
        assert!((pct - counts[1][1].unwrap() as f64 * 100.0 / sizes[1] as f64).abs() < 1e-9);
        assert!(invalid_argument(
            &d.run(a.cohort("active", "bought", first, 0, 3))
        ));
    });
}

/// Ids in windows (the script counts only the bytes where both bitmaps can
/// have bits): overlapping, disjoint, empty, at byte 0 and on byte edges;
/// bitmaps of very different lengths (a far id: the script copies the
/// window into its temporary key, or pads a copy of the shorter bitmap to
/// the longer one's length, rather than `BITOP` them as they are), the
/// return bitmap the longer and the shorter one; both ways are taken.
#[test]
fn cohort_tables_of_id_windows_equal_the_model() {
    support::on_server(|d| {
        let a = tagged("w", d);
        let windows: [(&str, u32, Vec<u64>); 10] = [
            ("active", 1, (0..40).chain(7_999..8_001).collect()),
            ("active", 2, (4_000..4_400).collect()),
            (
                "active",
                3,
                (9_000..9_100).step_by(3).chain([200_000]).collect(),
            ),
            ("bought", 1, (0..8).chain(39..41).collect()),
            (
                "bought",
                2,
                (7..4_001).step_by(7).chain([8_000, 150_000]).collect(),
            ),
            (
                "bought",
                3,
                (4_399..9_001).step_by(100).chain([120_000]).collect(),
            ),
            ("bought", 4, (20_000..20_010).collect()),
            // Wide windows: the shorter bitmap padded (the return, then the cohort).
            (
                "active",
                5,
                (0..80_000).step_by(5).chain([400_000]).collect(),
            ),
            ("bought", 5, (0..60_000).step_by(3).collect()),
            (
                "bought",
                6,
                (0..80_000).step_by(7).chain([600_000]).collect(),
            ),
        ];
        let mut data = Vec::new();
        for (ev, dd, ids) in windows {
            let at = utc(2024, 3, dd, 12);
            let events: Vec<_> = ids.iter().map(|id| (*id, at)).collect();
            d.run(a.mark_many(ev, &events)).unwrap();
            let p = Period::Day(day(2024, 3, dd));
            data.push((ev.to_string(), p, ids.into_iter().collect()));
        }
        let (copies, windows) = (calls(d, "copy"), calls(d, "getrange"));
        for (first, rows, cols) in [(1, 3, 4), (2, 2, 3), (1, 4, 1), (5, 1, 2), (1, 5, 6)] {
            let first = Period::Day(day(2024, 3, first));
            let t = d
                .run(a.cohort("active", "bought", first, rows, cols))
                .unwrap();
            let (sizes, counts) = model_cohort(&data, first, rows, cols);
            assert_eq!((t.sizes, t.counts), (sizes, counts), "from {first}");
        }
        assert!(calls(d, "copy") > copies, "a padded copy was taken");
        assert!(calls(d, "getrange") > windows, "a window copy was taken");
    });
}

#[test]
fn a_failing_expression_leaves_no_temporary_key_and_changes_nothing() {
    support::on_debug_server_with_connection(|d, con| {
        let a = tagged("f", d);
        let p = |dd| Period::Day(day(2024, 3, dd));
        for dd in 1..=3 {
            d.run(a.mark("active", dd as u64, &utc(2024, 3, dd, 0)))
                .unwrap();
        }
        // A list where a bitmap should be, last among the inputs.
        let wrong = a.key("bought", p(1));
        let _: () = redis::cmd("RPUSH").arg(&wrong).arg("x").query(con).unwrap();
        let before = support::digest(con);
        let e = Expr::event("active", p(1))
            .or(Expr::event("active", p(2)))
            .and_not(Expr::event("active", p(3)).or(Expr::event("bought", p(1))));
        for q in [
            a.query(e.clone()),
            a.query(e.clone()).cache("c", Duration::from_secs(9)),
        ] {
            let r = d.run(q.count());
            let err = r.expect_err("a list among the inputs");
            assert!(
                matches!(err.kind(), ErrorKind::Server { code, .. } if code == "WRONGTYPE"),
                "{err}"
            );
            assert_eq!(support::digest(con), before, "nothing changed");
        }
        let r = d.run(a.cohort("active", "bought", p(1), 2, 2));
        assert!(r.is_err());
        assert_eq!(support::digest(con), before, "nothing changed");
        // The script refuses a program that names an operator the client
        // says the server lacks, before any BITOP.
        let k = |dd| a.key("active", p(dd));
        let tmp = format!("an:{{f{}}}:tmp:1", d.name());
        let call = scripts::analytics::query(
            &tmp,
            &[k(1), k(2)],
            false,
            0,
            "COUNT",
            0,
            0,
            0,
            &["OR 1 2", "DIFF 1 2 3"],
        );
        assert!(script_refused(&d.run(call.unwrap())));
        assert_eq!(support::digest(con), before, "nothing changed");
        let _: () = redis::cmd("DEL").arg(&wrong).query(con).unwrap();
    });
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let cluster = support::cluster();
    let server = support::server();
    support::each_cluster_driver(&cluster, |d| {
        let mut reference = d.another(&server.url());
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut server.connection())
            .unwrap();
        // Tagged: every event in one slot, all on the server. Untagged:
        // multi-event expressions and cohorts computed client-side.
        for a in [
            Analytics::builder().tag("app").build().unwrap(),
            Analytics::default(),
        ] {
            let data = random_data(d, &a, 99);
            random_data(&mut reference, &a, 99);
            answers_match(d, &a, &data);
            let first = Period::Day(day(2024, 3, 1));
            let t = d.run(a.cohort("active", "bought", first, 4, 4)).unwrap();
            let r = reference
                .run(a.cohort("active", "bought", first, 4, 4))
                .unwrap();
            assert_eq!(t, r);
            assert_eq!(
                (t.sizes.clone(), t.counts.clone()),
                model_cohort(&data, first, 4, 4)
            );
        }
    });
}

/// How many `BITOP` calls the server has run (`INFO commandstats`, which
/// counts the commands a script calls).
fn bitop_calls(d: &mut Driver) -> u64 {
    calls(d, "bitop")
}

/// How many calls of `command` (lower case) the server has run.
fn calls(d: &mut Driver, command: &str) -> u64 {
    let info: String = d.cmd("", redis::cmd("INFO").arg("commandstats"));
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().expect("a count"))
}

/// The `BITOP` calls one count of `e` makes.
fn bitops_of(d: &mut Driver, a: &Analytics, e: &Expr) -> u64 {
    let before = bitop_calls(d);
    d.run(a.query(e.clone()).count()).unwrap();
    bitop_calls(d) - before
}

#[test]
fn the_newer_operators_are_sent_exactly_where_the_server_has_them() {
    support::on_server(|d| {
        let a = tagged("n", d);
        let p = Period::Day(day(2024, 3, 1));
        for (ev, id) in [("a", 1), ("a", 2), ("b", 2), ("c", 3)] {
            d.run(a.mark(ev, id, &utc(2024, 3, 1, 1))).unwrap();
        }
        let (x, y, z) = (
            Expr::event("a", p),
            Expr::event("b", p),
            Expr::event("c", p),
        );
        let diff = x.clone().and_not(y.clone().or(z.clone()));
        let andor = x.clone().and(y.clone().or(z.clone()));
        let detected = caps_of(d);
        // Redis 8.2 on has BITOP DIFF/ANDOR/ONE; Redis 7.0 and Valkey do not.
        let v = detected.version.expect("a version");
        let newer = detected.server == redis_patterns::core::ServerName::Redis
            && (v.major, v.minor) >= (8, 2);
        assert_eq!(detected.bitop_diff, newer, "bitop_diff of {v}");
        // One DIFF and one ANDOR there; elsewhere OR, AND, XOR and OR, AND.
        let want = if newer { (1, 1) } else { (3, 2) };
        assert_eq!((bitops_of(d, &a, &diff), bitops_of(d, &a, &andor)), want);
        assert_eq!(d.run(a.query(diff.clone()).count()).unwrap(), 1);
        set_caps(d, detected.without("bitop_diff"));
        assert_eq!((bitops_of(d, &a, &diff), bitops_of(d, &a, &andor)), (3, 2));
        assert_eq!(d.run(a.query(diff).count()).unwrap(), 1);
        set_caps(d, detected);
    });
}
