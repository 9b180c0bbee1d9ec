//! `analytics` ready queries against a real redis-server and a real
//! cluster, through both drivers: one id's streak (`analytics.streak`) and
//! the ids active in at least n of the last m periods, against a model of
//! random marks; the ranges refused before anything is sent.

#[allow(dead_code)]
mod bitmap;
#[path = "support/splitmix.rs"]
mod splitmix;
mod support;

use std::collections::BTreeMap;

use bitmap::{day, invalid_argument};
use chrono::{TimeZone, Utc};
use redis_patterns::analytics::{Analytics, Granularity, Period, Streak};
use splitmix::SplitMix64;
use support::Driver;

const USERS: u64 = 200;
const DAYS: u32 = 20;

fn march(d: u32) -> Period {
    Period::Day(day(2024, 3, d))
}

/// Random users active on random days of March 1 to 20 (each user with its
/// own habit, some every day); the model: each user's active days.
fn random_days(d: &mut Driver, a: &Analytics, seed: u64) -> BTreeMap<u64, Vec<bool>> {
    let mut rng = SplitMix64(seed);
    let mut model = BTreeMap::new();
    let mut events = Vec::new();
    for id in 0..USERS {
        let habit = rng.below(11);
        let days: Vec<bool> = (1..=DAYS).map(|_| rng.below(10) < habit).collect();
        for (i, on) in days.iter().enumerate() {
            if *on {
                events.push((
                    id,
                    Utc.with_ymd_and_hms(2024, 3, 1 + i as u32, 9, 0, 0)
                        .unwrap(),
                ));
            }
        }
        model.insert(id, days);
    }
    d.run(a.mark_many("active", &events)).unwrap();
    model
}

/// The model's streak of `days[from..=to]` (0-based day indices).
fn model_streak(days: &[bool], from: usize, to: usize) -> Streak {
    let mut s = Streak::default();
    let mut run = 0;
    for (i, on) in days.iter().enumerate().take(to + 1).skip(from) {
        run = if *on { run + 1 } else { 0 };
        s.marked += u32::from(*on);
        if run > s.longest {
            s.longest = run;
            s.longest_ends = Some(march(1 + i as u32));
        }
    }
    s.current = run;
    s
}

fn streaks_and_regulars_match(d: &mut Driver, a: &Analytics, model: &BTreeMap<u64, Vec<bool>>) {
    for (id, days) in model {
        for (from, to) in [(0, DAYS as usize - 1), (3, 9), (7, 7)] {
            let got = d
                .run(a.streak("active", *id, march(1 + from as u32), march(1 + to as u32)))
                .unwrap();
            assert_eq!(
                got,
                model_streak(days, from, to),
                "user {id}, days {from}..={to}"
            );
        }
    }
    for (n, m, last) in [(3, 7, 20), (7, 7, 20), (1, 5, 10), (10, 20, 20), (2, 3, 2)] {
        let q = a.active_in_last("active", n, m, march(last));
        let want: Vec<u64> = model
            .iter()
            .filter(|(_, days)| {
                let first = last as i64 - m as i64; // 0-based index of the first day
                let on = (first..last as i64)
                    .filter(|&i| i >= 0 && days[i as usize])
                    .count();
                on >= n
            })
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(
            d.run(q.count()).unwrap(),
            want.len() as u64,
            "{n} of {m} to {last}"
        );
        let page = d.run(q.members(0, 1000)).unwrap();
        assert_eq!(page.ids, want, "{n} of {m} to {last}");
        if let Some(first) = want.first() {
            assert!(d.run(q.contains(*first)).unwrap());
        }
    }
}

#[test]
fn streaks_and_active_in_n_of_m_equal_the_model() {
    support::on_server_and_cluster(|d| {
        // Untagged (the event's own slot) and tagged: one slot either way.
        for a in [
            Analytics::builder()
                .prefix(prefix(d, "u"))
                .granularities(&[Granularity::Day])
                .build()
                .unwrap(),
            Analytics::builder()
                .prefix(prefix(d, "t"))
                .tag("app")
                .build()
                .unwrap(),
        ] {
            let model = random_days(d, &a, 7);
            streaks_and_regulars_match(d, &a, &model);
        }
    });
}

fn prefix(d: &Driver, what: &str) -> redis_patterns::keys::Prefix {
    redis_patterns::keys::Prefix::new(&format!("rd{what}{}:", d.name())).unwrap()
}

#[test]
fn a_streak_reads_weeks_and_months_and_skips_an_id_above_the_bound() {
    support::on_server(|d| {
        let a = Analytics::builder()
            .prefix(prefix(d, "w"))
            .max_id(100)
            .build()
            .unwrap();
        // Weeks 9, 10 and 12 of 2024, and month 2024-04.
        for (m, dd) in [(2, 28), (3, 5), (3, 18), (4, 2)] {
            let at = Utc.with_ymd_and_hms(2024, m, dd, 9, 0, 0).unwrap();
            d.run(a.mark("active", 42, &at)).unwrap();
        }
        let s = d
            .run(a.streak("active", 42, Period::Week(2024, 8), Period::Week(2024, 12)))
            .unwrap();
        assert_eq!(
            s,
            Streak {
                longest: 2,
                longest_ends: Some(Period::Week(2024, 10)),
                current: 1,
                marked: 3
            }
        );
        assert_eq!(
            serde_json::to_value(s).unwrap(),
            serde_json::json!({"longest": 2, "longest_ends": "W:2024-W10", "current": 1, "marked": 3})
        );
        let months = d
            .run(a.streak("active", 42, Period::Month(2024, 1), Period::Month(2024, 5)))
            .unwrap();
        assert_eq!((months.longest, months.current, months.marked), (3, 0, 3));
        assert_eq!(months.longest_ends, Some(Period::Month(2024, 4)));
        let nobody = d.run(a.streak("active", 43, march(1), march(31))).unwrap();
        assert_eq!(nobody, Streak::default());
        // Above the bound nobody can have been marked: answered without a call.
        assert_eq!(
            d.run(a.streak("active", 101, march(1), march(31))).unwrap(),
            Streak::default()
        );
    });
}

#[test]
fn bad_ranges_are_refused_before_anything_is_sent() {
    support::on_server(|d| {
        let a = Analytics::default();
        let refused = |d: &mut Driver, from: Period, to: Period| {
            invalid_argument(&d.run(a.streak("active", 1, from, to)))
        };
        assert!(refused(d, march(5), march(4)));
        assert!(refused(d, march(5), Period::Week(2024, 10)));
        let far = march(1).offset(Analytics::MAX_RANGE as i64).unwrap();
        assert!(refused(d, march(1), far));
        assert!(
            d.run(a.streak("active", 1, march(1), far.offset(-1).unwrap()))
                .is_ok()
        );
        assert!(d.run(a.streak("bad name", 1, march(1), march(2))).is_err());
        for (n, m) in [
            (0, 3),
            (4, 3),
            (1, 0),
            (1, Analytics::MAX_RANGE + 1),
            (33, 40),
        ] {
            let q = a.active_in_last("active", n, m, march(20));
            assert!(invalid_argument(&d.run(q.count())), "{n} of {m}");
        }
        let q = a.active_in_last("active", 32, 40, march(20));
        assert_eq!(d.run(q.count()).unwrap(), 0);
        let n: u64 = d.cmd("any", &mut redis::cmd("DBSIZE"));
        assert_eq!(n, 0);
    });
}
