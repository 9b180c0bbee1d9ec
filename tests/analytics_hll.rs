//! `analytics` approximate uniques against a real redis-server and a real
//! cluster: a HyperLogLog beside the finest bitmaps (in the same
//! `analytics.mark_hll` script) or instead of them for string ids, counted
//! with `PFCOUNT` of one period or the union of a range.
//!
//! The error bound: Redis's HyperLogLog has a standard error of
//! 1.04 / √16384 = 0.81 %; one test measures it (the root mean square of
//! the errors of 32 HyperLogLogs of 40,000 distinct strings), the others
//! allow one count 5 standard errors (4.05 %), which a random set of ids
//! exceeds with a probability below 10⁻⁶. Its
//! hash (MurmurHash64A with a fixed seed) is deterministic, so the same
//! ids give the same estimate on every run and server: the bound is not a
//! flaky one.

mod bitmap;
mod support;

use bitmap::{day, invalid_argument, uid_out_of_range};
use chrono::{DateTime, TimeZone, Utc};
use redis_patterns::analytics::{Analytics, Granularity, Period};
use redis_patterns::{ErrorKind, Op, scripts};

/// Redis's HyperLogLog's standard error, 1.04 / √16384.
const STANDARD_ERROR: f64 = 0.0081;

/// Five standard errors.
const BOUND: f64 = 5.0 * STANDARD_ERROR;

fn utc(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
}

fn within(estimate: u64, exact: u64) -> bool {
    (estimate as f64 - exact as f64).abs() <= BOUND * exact as f64
}

#[test]
fn a_hyperloglog_beside_the_bitmaps_counts_within_the_bound() {
    support::on_server_and_cluster(|d| {
        let a = Analytics::builder()
            .tag(&format!("h{}", d.name()))
            .hll(true)
            .build()
            .unwrap();
        // 20,000 ids on March 4th, 15,000 of them again and 5,000 new ones on
        // the 5th (same ISO week and month).
        let on = |dd, ids: std::ops::Range<u64>| -> Vec<(u64, DateTime<Utc>)> {
            ids.map(|i| (i, utc(2024, 3, dd, 10))).collect()
        };
        assert_eq!(
            d.run(a.mark_many("active", &on(4, 0..20_000))).unwrap(),
            Some(20_000)
        );
        d.run(a.mark_many("active", &on(5, 5_000..25_000))).unwrap();
        assert_eq!(
            d.run(a.mark("active", 30_000, &utc(2024, 3, 5, 11)))
                .unwrap(),
            Some(true)
        );
        let (d4, d5) = (Period::Day(day(2024, 3, 4)), Period::Day(day(2024, 3, 5)));
        let week = Period::Week(2024, 10);
        let month = Period::Month(2024, 3);
        for (p, exact) in [(d4, 20_000), (d5, 20_001), (week, 25_001), (month, 25_001)] {
            let est = d.run(a.count_uniques("active", p)).unwrap();
            assert!(within(est, exact), "{p}: {est} for {exact}");
        }
        // The exact counts from the bitmaps, set in the same script.
        assert_eq!(d.run(a.count("active", week)).unwrap(), 25_001);
        let union = d.run(a.count_uniques_range("active", d4, d5)).unwrap();
        assert_eq!(union, d.run(a.count_uniques("active", week)).unwrap());
        // Only the finest period has a HyperLogLog.
        let exists = |d: &mut support::Driver, k: String| -> bool {
            let n: i64 = d.cmd(&k, redis::cmd("EXISTS").arg(&k));
            n == 1
        };
        assert!(exists(d, a.hll_key("active", d4)));
        assert!(!exists(d, a.hll_key("active", week)));
        // An id above the bound is refused before anything is written.
        let r = d.run(a.mark("active", a.max_id() + 1, &utc(2024, 3, 6, 0)));
        assert!(uid_out_of_range(&r), "{r:?}");
        assert!(!exists(
            d,
            a.hll_key("active", Period::Day(day(2024, 3, 6)))
        ));
    });
}

/// The stated standard error, measured: 32 HyperLogLogs (one event each)
/// of 40,000 distinct strings (1.28M strings in all), their relative
/// errors' root mean square against 0.81 % and their mean against 0.
#[test]
fn the_measured_standard_error_is_the_stated_one() {
    const SETS: usize = 32;
    const N: u64 = 40_000;
    let server = support::server();
    let mut d = support::drivers(&server.url()).remove(0);
    let a = Analytics::builder()
        .granularities(&[Granularity::Day])
        .build()
        .unwrap();
    let at = utc(2024, 3, 4, 10);
    let strings = |k: usize| -> Vec<(String, DateTime<Utc>)> {
        (0..N)
            .map(|i| (format!("{k}:user{i}@example.com"), at))
            .collect()
    };
    let marks = (0..SETS)
        .map(|k| a.mark_strings(&format!("s{k}"), &strings(k)))
        .collect();
    d.run(Op::join(marks)).unwrap();
    let p = Period::Day(day(2024, 3, 4));
    let counts = (0..SETS)
        .map(|k| a.count_uniques(&format!("s{k}"), p))
        .collect();
    let errors: Vec<f64> = d
        .run(Op::join(counts))
        .unwrap()
        .into_iter()
        .map(|est| (est as f64 - N as f64) / N as f64)
        .collect();
    let rms = (errors.iter().map(|e| e * e).sum::<f64>() / SETS as f64).sqrt();
    let mean = errors.iter().sum::<f64>() / SETS as f64;
    println!(
        "{SETS} HyperLogLogs of {N} distinct strings: standard error {:.3} %, mean error {:+.3} %",
        rms * 100.0,
        mean * 100.0
    );
    // The root mean square of 32 errors is within 3 / √(2 · 32) = 37.5 % of
    // the standard error, their mean within 3 standard errors / √32 of 0,
    // each within 5 standard errors (all with a probability above 99.7 %).
    assert!(rms <= STANDARD_ERROR * 1.375, "{rms}");
    assert!(
        mean.abs() <= 3.0 * STANDARD_ERROR / (SETS as f64).sqrt(),
        "{mean}"
    );
    assert!(errors.iter().all(|e| e.abs() <= BOUND), "{errors:?}");
    // Adding them again changes nothing: the same estimate, and no bitmap.
    let again = d.run(a.count_uniques("s0", p)).unwrap();
    d.run(a.mark_strings("s0", &strings(0)[..10_000])).unwrap();
    assert_eq!(d.run(a.count_uniques("s0", p)).unwrap(), again);
    assert_eq!(d.run(a.count("s0", p)).unwrap(), 0);
}

#[test]
fn string_ids_make_unions_over_periods() {
    support::on_server_and_cluster(|d| {
        let a = Analytics::builder()
            .granularities(&[Granularity::Day, Granularity::Week])
            .build()
            .unwrap();
        let mark = |d: &mut support::Driver, dd, ids: std::ops::Range<u32>| {
            let events: Vec<(String, DateTime<Utc>)> = ids
                .map(|i| (format!("{i:08x}-uuid"), utc(2024, 3, dd, 9)))
                .collect();
            d.run(a.mark_strings("visit", &events)).unwrap();
        };
        mark(d, 4, 0..6_000);
        mark(d, 6, 4_000..10_000);
        assert_eq!(
            d.run(a.mark_string("visit", "someone@example.com", &utc(2024, 3, 10, 0)))
                .unwrap(),
            Some(true)
        );
        let p = |dd| Period::Day(day(2024, 3, dd));
        let week = d
            .run(a.count_uniques("visit", Period::Week(2024, 10)))
            .unwrap();
        assert!(within(week, 10_001), "{week}");
        let range = d.run(a.count_uniques_range("visit", p(4), p(6))).unwrap();
        assert!(within(range, 10_000), "{range}");
        assert!(within(
            d.run(a.count_uniques("visit", p(6))).unwrap(),
            6_000
        ));
        assert_eq!(d.run(a.count_uniques("visit", p(5))).unwrap(), 0);
        // With weeks the finest, a month is not made of whole weeks.
        let weekly = Analytics::builder()
            .granularities(&[Granularity::Week, Granularity::Month])
            .build()
            .unwrap();
        let r = d.run(weekly.count_uniques("visit", Period::Month(2024, 3)));
        assert!(invalid_argument(&r), "{r:?}");
        let r = d.run(a.count_uniques_range("visit", p(6), p(4)));
        assert!(invalid_argument(&r), "{r:?}");
    });
}

#[test]
fn a_string_that_is_no_hyperloglog_is_refused_before_any_bit_is_set() {
    support::on_debug_server_with_connection(|d, con| {
        let a = Analytics::builder()
            .tag(&format!("w{}", d.name()))
            .hll(true)
            .build()
            .unwrap();
        let at = utc(2024, 3, 4, 10);
        let hll = a.hll_key("active", Period::Day(day(2024, 3, 4)));
        let _: () = redis::cmd("SET").arg(&hll).arg("plain").query(con).unwrap();
        let before = support::digest(con);
        let err = d.run(a.mark("active", 7, &at)).expect_err("no HyperLogLog");
        assert!(
            matches!(err.kind(), ErrorKind::Server { code, .. } if code == "WRONGTYPE"),
            "{err}"
        );
        assert_eq!(support::digest(con), before, "nothing changed");
        // With bitmaps, the ids must be integers: refused by the script.
        let call = scripts::analytics::mark_hll(
            &hll,
            &[a.key("active", Period::Day(day(2024, 3, 4)))],
            100,
            &["0", "0", "x"],
        );
        let r = d.run(call.unwrap());
        assert!(bitmap::script_refused(&r), "{r:?}");
        assert_eq!(support::digest(con), before, "nothing changed");
        let _: () = redis::cmd("DEL").arg(&hll).query(con).unwrap();
    });
}

/// A unique event (one bitmap, no time) with its HyperLogLog: beside the
/// bitmap with `hll` (`mark_unique`), alone for string ids
/// (`mark_unique_string(s)`); `count_unique_approx` within 5 standard
/// errors of the exact count, and within 3 for 100,000 distinct strings
/// (deterministic ids: the same estimate on every run).
#[test]
fn a_unique_event_has_a_hyperloglog_beside_its_bitmap_or_alone() {
    support::on_server_and_cluster(|d| {
        let a = Analytics::builder()
            .tag(&format!("u{}", d.name()))
            .max_id(100_000)
            .hll(true)
            .build()
            .unwrap();
        for id in [7, 7, 42] {
            d.run(a.mark_unique("member", id)).unwrap();
        }
        assert_eq!(d.run(a.count_unique("member")).unwrap(), 2);
        assert_eq!(d.run(a.count_unique_approx("member")).unwrap(), 2);
        assert_eq!(d.run(a.mark_unique("member", 42)).unwrap(), Some(false));
        // The bound is checked before anything is written.
        assert!(uid_out_of_range(&d.run(a.mark_unique("member", 100_001))));
        assert_eq!(d.run(a.count_unique_approx("member")).unwrap(), 2);
        let n = 100_000u64;
        let ids: Vec<String> = (0..n).map(|i| format!("member{i}@example.com")).collect();
        d.run(a.mark_unique_strings("email", &ids)).unwrap();
        let est = d.run(a.count_unique_approx("email")).unwrap();
        let error = (est as f64 - n as f64) / n as f64;
        println!(
            "unique event: {n} distinct strings counted {est} ({:+.3} %)",
            error * 100.0
        );
        assert!(error.abs() <= 3.0 * STANDARD_ERROR, "{est}");
        // Strings leave the bitmap alone; adding one again changes nothing.
        assert_eq!(d.run(a.count_unique("email")).unwrap(), 0);
        assert_eq!(
            d.run(a.mark_unique_string("email", "member1@example.com"))
                .unwrap(),
            Some(false)
        );
        assert_eq!(d.run(a.count_unique_approx("email")).unwrap(), est);
        // Without hll, mark_unique sets the bit only.
        let plain = Analytics::builder()
            .tag(&format!("p{}", d.name()))
            .build()
            .unwrap();
        d.run(plain.mark_unique("member", 1)).unwrap();
        assert_eq!(d.run(plain.count_unique("member")).unwrap(), 1);
        assert_eq!(d.run(plain.count_unique_approx("member")).unwrap(), 0);
        assert!(within(d.run(a.count_unique_approx("member")).unwrap(), 2));
    });
}
