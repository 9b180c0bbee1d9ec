//! `visits`: exact daily unique visitors against a real redis-server, every
//! test body through both drivers (sync `Connection`, async
//! `AsyncConnection`).
//!
//! Days whose keys must survive are in 2099 (their end-of-day `EXPIREAT` must
//! lie after the server's clock); every expiry is checked against instants
//! computed from explicit dates and zones, never the machine's clock or zone.

#[path = "support/counting.rs"]
mod counting;
mod support;

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{Datelike, FixedOffset, NaiveDate, TimeZone, Utc, Weekday};
use counting::counted;
use redis_patterns::core::CallMode;
use redis_patterns::visits::{self, VisitCounter};
use redis_patterns::{Batch, Error, ErrorKind, Retention};
use support::Driver;

/// The per-member "new" answers of a batch that was not sent again
/// (nothing cuts a reply here: each is known).
fn sure(flags: &[Option<bool>]) -> Vec<bool> {
    flags
        .iter()
        .map(|f| f.expect("known: nothing was resent"))
        .collect()
}

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn expiretime(d: &mut Driver, key: &str) -> i64 {
    d.cmd(key, redis::cmd("EXPIRETIME").arg(key))
}

fn encoding(d: &mut Driver, key: &str) -> String {
    d.cmd(key, redis::cmd("OBJECT").arg("ENCODING").arg(key))
}

/// `OBJECT ENCODING` of every key, in one batch.
fn encodings(d: &mut Driver, keys: &[String]) -> Vec<String> {
    let mut batch = Batch::new();
    for key in keys {
        let mut cmd = redis::cmd("OBJECT");
        cmd.arg("ENCODING").arg(key);
        batch.add(key, cmd);
    }
    d.run(batch).unwrap().all().unwrap()
}

fn scard_sum<Tz: TimeZone>(d: &mut Driver, c: &VisitCounter<Tz>, day: NaiveDate) -> u64 {
    d.run(c.shard_sizes(day)).unwrap().iter().sum()
}

fn is_kind(r: Result<impl std::fmt::Debug, Error>, want: fn(&ErrorKind) -> bool) {
    match r.as_ref().map_err(Error::kind) {
        Err(kind) if want(kind) => {}
        other => panic!("unexpected result: {other:?}"),
    }
}

fn day_ended(k: &ErrorKind) -> bool {
    matches!(k, ErrorKind::DayEnded { .. })
}

fn invalid(k: &ErrorKind) -> bool {
    matches!(k, ErrorKind::InvalidArgument { .. })
}

#[test]
fn add_counts_each_member_once_and_sets_end_of_day_expiry() {
    support::on_server(|con| {
        let c = VisitCounter::new("site", Utc, 8).unwrap();
        let d = day(2099, 5, 17);

        let first = con.run(c.add(d, 1001)).unwrap();
        assert!(first.new == Some(true));
        assert_eq!(first.count, 1);
        let again = con.run(c.add(d, 1001)).unwrap();
        assert!(again.new == Some(false));
        assert_eq!(again.count, 1);
        let other = con.run(c.add(d, -7)).unwrap();
        assert!(other.new == Some(true));
        assert_eq!(other.count, 2);

        assert_eq!(con.run(c.count(d)).unwrap(), 2);
        assert!(con.run(c.contains(d, 1001)).unwrap());
        assert!(!con.run(c.contains(d, 1002)).unwrap());
        assert!(!con.run(c.contains(day(2099, 5, 18), 1001)).unwrap());

        // The member sits in the shard crc32("1001") % 8, as an intset.
        let key = c.shard_key(d, crc32fast::hash(b"1001") % 8);
        assert_eq!(key, c.member_shard_key(d, 1001));
        let is_member: bool = con.cmd(&key, redis::cmd("SISMEMBER").arg(&key).arg(1001));
        assert!(is_member);
        assert_eq!(encoding(con, &key), "intset");
        assert_eq!(
            key,
            "visits:{site:2099-05-17}:".to_string() + &(crc32fast::hash(b"1001") % 8).to_string()
        );

        // EXPIREAT: the first second of 2099-05-18 UTC plus the default
        // grace of two days, on the counter and the shard.
        let end = Utc
            .with_ymd_and_hms(2099, 5, 20, 0, 0, 0)
            .unwrap()
            .timestamp();
        assert_eq!(expiretime(con, &c.counter_key(d)), end);
        assert_eq!(expiretime(con, &key), end);
        assert_eq!(scard_sum(con, &c, d), 2);
    });
}

#[test]
fn contains_runs_read_only() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let mut raw = server.connection();
        let c = VisitCounter::new("ro", Utc, 4).unwrap();
        let day = day(2099, 1, 2);
        d.run(c.add(day, 5)).unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(&mut raw)
            .unwrap();
        assert!(d.run(c.contains(day, 5)).unwrap());
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut raw)
            .unwrap();
        // EVALSHA_RO (FCALL_RO in functions mode) only.
        let (ro, rw) = match d.call_mode() {
            CallMode::Evalsha => ("cmdstat_evalsha_ro:", "cmdstat_evalsha:"),
            CallMode::Functions => ("cmdstat_fcall_ro:", "cmdstat_fcall:"),
        };
        assert!(
            info.lines().any(|l| l.starts_with(ro)),
            "{} {info}",
            d.name()
        );
        assert!(!info.contains(rw), "{} {info}", d.name());
    });
}

#[test]
fn grace_and_fixed_offset_zone() {
    support::on_server(|d| {
        let ist = FixedOffset::east_opt(5 * 3600 + 1800).unwrap();
        let c = VisitCounter::builder("ist", ist, 4)
            .retention(Retention::After(Duration::from_secs(3600)))
            .build()
            .unwrap();
        // 2099-03-01 20:00 UTC is already 2099-03-02 01:30 in +05:30.
        let instant = Utc.with_ymd_and_hms(2099, 3, 1, 20, 0, 0).unwrap();
        assert_eq!(c.day_of(&instant), day(2099, 3, 2));
        d.run(c.add_at(&instant, 42)).unwrap();
        let end = ist
            .with_ymd_and_hms(2099, 3, 3, 0, 0, 0)
            .unwrap()
            .timestamp();
        assert_eq!(
            end,
            Utc.with_ymd_and_hms(2099, 3, 2, 18, 30, 0)
                .unwrap()
                .timestamp()
        );
        assert_eq!(expiretime(d, &c.counter_key(day(2099, 3, 2))), end + 3600);
        let shard = c.member_shard_key(day(2099, 3, 2), 42);
        let pexp: i64 = d.cmd(&shard, redis::cmd("PEXPIRETIME").arg(&shard));
        assert_eq!(pexp, (end + 3600) * 1000);
    });
}

/// The last `weekday` of a month, from the calendar alone.
fn last_weekday(y: i32, m: u32, weekday: Weekday) -> NaiveDate {
    let mut d = day(y, m + 1, 1).pred_opt().unwrap();
    while d.weekday() != weekday {
        d = d.pred_opt().unwrap();
    }
    d
}

#[test]
fn end_of_day_across_dst_changes_pure() {
    use chrono_tz::{America, Europe};
    let utc = |y, mo, d, h, mi| Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap();
    // Berlin 2024: 23-hour day 2024-03-31 ends at 00:00 CEST = 22:00 UTC;
    // 25-hour day 2024-10-27 ends at 00:00 CET = 23:00 UTC.
    let berlin = VisitCounter::new("b", Europe::Berlin, 1).unwrap();
    for (d, end) in [
        (day(2024, 3, 30), utc(2024, 3, 30, 23, 0)),
        (day(2024, 3, 31), utc(2024, 3, 31, 22, 0)),
        (day(2024, 10, 26), utc(2024, 10, 26, 22, 0)),
        (day(2024, 10, 27), utc(2024, 10, 27, 23, 0)),
    ] {
        assert_eq!(berlin.end_of_day(d).unwrap(), end, "Berlin {d}");
    }
    let len = |d: NaiveDate| {
        (berlin.end_of_day(d).unwrap() - berlin.end_of_day(d.pred_opt().unwrap()).unwrap())
            .num_hours()
    };
    assert_eq!((len(day(2024, 3, 31)), len(day(2024, 10, 27))), (23, 25));
    // New York 2024: changes on 03-10 and 11-03 at 02:00 local.
    let ny = VisitCounter::new("n", America::New_York, 1).unwrap();
    for (d, end) in [
        (day(2024, 3, 10), utc(2024, 3, 11, 4, 0)),
        (day(2024, 11, 3), utc(2024, 11, 4, 5, 0)),
    ] {
        assert_eq!(ny.end_of_day(d).unwrap(), end, "New York {d}");
    }
    // São Paulo 2018-11-04: clocks jumped from 00:00 to 01:00, so local
    // midnight did not exist; the day before ends at 01:00 -02:00.
    let sp = VisitCounter::new("s", America::Sao_Paulo, 1).unwrap();
    assert_eq!(
        sp.end_of_day(day(2018, 11, 3)).unwrap(),
        utc(2018, 11, 4, 3, 0)
    );
    // Fixed offsets have no DST: every day is 24 h.
    let fixed = VisitCounter::new("f", FixedOffset::west_opt(3 * 3600).unwrap(), 1).unwrap();
    assert_eq!(
        fixed.end_of_day(day(2024, 3, 31)).unwrap(),
        utc(2024, 4, 1, 3, 0)
    );
}

#[test]
fn expireat_on_the_server_across_dst_changes() {
    use chrono_tz::Europe;
    let server = support::server();
    support::each_driver(&server, |con| {
        let c = VisitCounter::builder("dst", Europe::Berlin, 4)
            .retention(Retention::After(Duration::ZERO))
            .late_window(Some(Duration::ZERO))
            .build()
            .unwrap();
        // EU rule: summer time from the last Sunday of March to the last
        // Sunday of October, switching at 01:00 UTC. Expected instants come
        // from that rule, not from the zone database.
        let spring = last_weekday(2099, 3, Weekday::Sun);
        let autumn = last_weekday(2099, 10, Weekday::Sun);
        let at = |d: NaiveDate, h: u32| {
            Utc.from_utc_datetime(&d.and_hms_opt(h, 0, 0).unwrap())
                .timestamp()
        };
        let cases = [
            (
                spring.pred_opt().unwrap(),
                at(spring.pred_opt().unwrap(), 23),
            ), // CET day
            (spring, at(spring, 22)), // 23 h day
            (
                autumn.pred_opt().unwrap(),
                at(autumn.pred_opt().unwrap(), 22),
            ), // CEST day
            (autumn, at(autumn, 23)), // 25 h day
        ];
        for (d, expected) in cases {
            let v = con.run(c.add(d, 7)).unwrap();
            assert!(v.new == Some(true));
            assert_eq!(c.expire_at(d).unwrap(), Some(expected), "{d}");
            assert_eq!(expiretime(con, &c.counter_key(d)), expected, "{d}");
            assert_eq!(expiretime(con, &c.member_shard_key(d, 7)), expected, "{d}");
        }
    });
}

#[test]
fn batch_and_pipelined_adds() {
    support::on_server(|con| {
        let c = VisitCounter::new("batch", Utc, 16).unwrap();
        let d = day(2099, 7, 1);
        con.run(c.add(d, 3)).unwrap();
        let members = [1, 2, 3, 2, 4, -5, 1, 0];
        let b = con.run(c.add_batch(d, &members)).unwrap();
        // 3 was counted before; repeats within the batch are new at most once.
        assert_eq!(
            sure(&b.new),
            vec![true, true, false, false, true, true, false, true]
        );
        let distinct: HashSet<i64> = members.iter().copied().chain([3]).collect();
        assert_eq!(b.count, distinct.len() as u64);
        assert_eq!(scard_sum(con, &c, d), distinct.len() as u64);

        let p = con.run(c.add_pipelined(d, &[4, 9, 9, 10])).unwrap();
        let flags: Vec<bool> = p.iter().map(|v| v.new.unwrap()).collect();
        assert_eq!(flags, vec![false, true, false, true]);
        assert_eq!(p.last().unwrap().count, distinct.len() as u64 + 2);
        assert_eq!(con.run(c.count(d)).unwrap(), distinct.len() as u64 + 2);

        // A batch larger than the script's unpack chunk, in one shard.
        let one = VisitCounter::new("one", Utc, 1).unwrap();
        let big: Vec<i64> = (0..9_000).collect();
        let r = con.run(one.add_batch(d, &big)).unwrap();
        assert_eq!(r.count, 9_000);
        assert!(sure(&r.new).iter().all(|&n| n));
        let r = con.run(one.add_batch(d, &big[8_000..])).unwrap();
        assert_eq!(r.count, 9_000);
        assert!(sure(&r.new).iter().all(|&n| !n));
        let empty = con.run(one.add_batch(d, &[])).unwrap();
        assert_eq!((empty.count, empty.new.len()), (9_000, 0));
    });
}

#[test]
fn concurrent_adds_count_exactly() {
    support::on_server_at(|con, url| {
        let c = VisitCounter::new("conc", Utc, 16).unwrap();
        let d = day(2099, 2, 3);
        const THREADS: i64 = 8;
        const PER_THREAD: i64 = 10_000;
        // Each thread: 5,000 ids shared by all threads + 5,000 of its own, in
        // its own shuffled order (sorted by a hash of thread and id); threads
        // use single, pipelined and batched adds.
        let ids = |t: i64| -> Vec<i64> {
            let mut v: Vec<i64> = (0..PER_THREAD / 2)
                .chain((0..PER_THREAD / 2).map(|i| 1_000_000 * (t + 1) + i))
                .collect();
            v.sort_by_key(|&id| {
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&(t, id), &mut h);
                std::hash::Hasher::finish(&h)
            });
            v
        };
        let expected: HashSet<i64> = (0..THREADS).flat_map(ids).collect();
        assert_eq!(expected.len(), 45_000);
        let new_total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let c = c.clone();
                    let mut d2 = con.another(url);
                    let mine = ids(t);
                    s.spawn(move || {
                        let mut new = 0u64;
                        match t % 3 {
                            0 => {
                                for &m in &mine {
                                    new += d2.run(c.add(d, m)).unwrap().new.unwrap() as u64;
                                }
                            }
                            1 => {
                                for chunk in mine.chunks(50) {
                                    let r = d2.run(c.add_pipelined(d, chunk)).unwrap();
                                    new += r.iter().filter(|v| v.new.unwrap()).count() as u64;
                                }
                            }
                            _ => {
                                for chunk in mine.chunks(250) {
                                    let r = d2.run(c.add_batch(d, chunk)).unwrap();
                                    new += sure(&r.new).iter().filter(|&&n| n).count() as u64;
                                }
                            }
                        }
                        new
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        let exact = expected.len() as u64;
        assert_eq!(con.run(c.count(d)).unwrap(), exact);
        assert_eq!(scard_sum(con, &c, d), exact);
        assert_eq!(
            new_total, exact,
            "each distinct id is reported new exactly once"
        );
        // The client-side union agrees (an empty second day forces the union
        // path).
        assert_eq!(
            con.run(c.distinct_over(&[d, day(2099, 2, 4)])).unwrap(),
            exact
        );
    });
}

#[test]
fn distinct_over_several_days() {
    support::on_server(|con| {
        let c = VisitCounter::new("multi", Utc, 32).unwrap();
        let days = [day(2099, 12, 31), day(2100, 1, 1), day(2100, 1, 2)];
        let per_day: Vec<Vec<i64>> = vec![
            (0..300).collect(),
            (200..600).collect(),
            (550..700).chain(0..10).collect(),
        ];
        for (d, ms) in days.iter().zip(&per_day) {
            con.run(c.add_batch(*d, ms)).unwrap();
        }
        let all: HashSet<i64> = per_day.iter().flatten().copied().collect();
        assert_eq!(con.run(c.distinct_over(&days)).unwrap(), all.len() as u64);
        assert_eq!(
            con.run(c.distinct_between(days[0], days[2])).unwrap(),
            all.len() as u64
        );
        let first_two: HashSet<i64> = per_day[..2].iter().flatten().copied().collect();
        assert_eq!(
            con.run(c.distinct_between(days[0], days[1])).unwrap(),
            first_two.len() as u64
        );
        assert_eq!(
            con.run(c.distinct_over(&[days[1], days[1]])).unwrap(),
            per_day[1].len() as u64
        );
        is_kind(con.run(c.distinct_between(days[2], days[0])), invalid);
        // Many shards over many days take several chunks (one batch each).
        let wide = VisitCounter::new("wide", Utc, 300).unwrap();
        let week: Vec<NaiveDate> = (0..7).map(|i| day(2099, 6, 1 + i)).collect();
        let mut model = HashSet::new();
        for (i, d) in week.iter().enumerate() {
            let ms: Vec<i64> = (i as i64 * 500..i as i64 * 500 + 2_000).collect();
            con.run(wide.add_batch(*d, &ms)).unwrap();
            model.extend(ms);
        }
        assert_eq!(
            con.run(wide.distinct_between(week[0], week[6])).unwrap(),
            model.len() as u64
        );
    });
}

/// Kills the driver's connection to the server from another client.
fn kill_connection(d: &mut Driver, server: &redis_patterns_test_support::LocalServer) {
    let id: i64 = d.cmd("x", redis::cmd("CLIENT").arg("ID"));
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query(&mut server.connection())
        .unwrap();
}

#[test]
fn max_intset_entries_falls_back_only_when_config_is_refused() {
    let server = support::server_with(&["--rename-command", "CONFIG", ""]);
    support::each_driver(&server, |d| {
        assert_eq!(
            d.run(visits::ShardPlan::max_intset_entries()).unwrap(),
            visits::ShardPlan::DEFAULT_MAX_INTSET_ENTRIES
        );
        let (c, plan) = d.run(VisitCounter::planned("p", Utc, 20_000)).unwrap();
        assert_eq!(
            c.shards(),
            visits::ShardPlan::plan_shards(20_000, visits::ShardPlan::DEFAULT_MAX_INTSET_ENTRIES)
                .unwrap()
        );
        // The plan says that it assumed the default, and why.
        assert_eq!(plan.shards, c.shards());
        assert_eq!(
            plan.max_intset_entries,
            visits::ShardPlan::DEFAULT_MAX_INTSET_ENTRIES
        );
        assert_eq!(
            plan.limits_source,
            redis_patterns::core::LimitsSource::DefaultBecauseDenied
        );
    });

    // A dropped connection is no reason for a default: the read is sent
    // again on a new connection and answers the server's value.
    let server = support::server_with(&["--set-max-intset-entries", "128"]);
    support::each_driver(&server, |d| {
        kill_connection(d, &server);
        assert_eq!(
            d.run(visits::ShardPlan::max_intset_entries()).unwrap(),
            128,
            "{}",
            d.name()
        );
        kill_connection(d, &server);
        let (_, plan) = d.run(VisitCounter::planned("p", Utc, 20_000)).unwrap();
        assert_eq!(
            (plan.max_intset_entries, plan.limits_source),
            (128, redis_patterns::core::LimitsSource::Server)
        );
    });
}

#[test]
fn planner_keeps_every_shard_an_intset() {
    let server = support::server_with(&["--set-max-intset-entries", "128"]);
    support::each_driver(&server, |con| {
        assert_eq!(
            con.run(visits::ShardPlan::max_intset_entries()).unwrap(),
            128
        );
        let expected = 20_000u64;
        let (c, plan) = con
            .run(VisitCounter::planned("plan", Utc, expected))
            .unwrap();
        assert_eq!(
            con.run(visits::ShardPlan::planned_shards(expected))
                .unwrap(),
            plan
        );
        assert_eq!(
            (plan.shards, plan.max_intset_entries, plan.limits_source),
            (c.shards(), 128, redis_patterns::core::LimitsSource::Server)
        );
        let mean = expected as f64 / c.shards() as f64;
        assert!(mean + 4.0 * mean.sqrt() <= 128.0, "mean {mean}");
        let d = day(2099, 9, 9);
        let members: Vec<i64> = (1..=expected as i64).collect();
        for chunk in members.chunks(2_000) {
            con.run(c.add_batch(d, chunk)).unwrap();
        }
        let sizes = con.run(c.shard_sizes(d)).unwrap();
        assert_eq!(sizes.iter().sum::<u64>(), expected);
        assert!(*sizes.iter().max().unwrap() <= 128);
        let keys = c.shard_keys(d);
        for (key, enc) in keys.iter().zip(encodings(con, &keys)) {
            assert_eq!(enc, "intset", "{key}");
        }
    });
    // The plan for a million at the default limit keeps the same margin.
    let shards = visits::ShardPlan::plan_shards(1_000_000, 512).unwrap();
    let mean = 1e6 / shards as f64;
    assert!(mean + 4.0 * mean.sqrt() <= 512.0);
    assert!(mean > 400.0, "not needlessly many shards: {shards}");
}

#[test]
fn string_ids_map_to_i32_members() {
    support::on_server(|con| {
        let c = VisitCounter::new("str", Utc, 4).unwrap();
        let d = day(2099, 4, 4);
        let ids = ["alice", "bob", "e4d909c290d0fb1ca068ffaddf22cbd0", "alice"];
        let members: Vec<i64> = ids
            .iter()
            .map(|s| VisitCounter::member_from_string_id(s))
            .collect();
        for m in &members {
            assert!(i32::try_from(*m).is_ok());
        }
        assert_eq!(members[0], crc32fast::hash(b"alice") as i32 as i64);
        let r = con.run(c.add_batch(d, &members)).unwrap();
        assert_eq!(r.count, 3);
        for key in c.shard_keys(d) {
            let exists: bool = con.cmd(&key, redis::cmd("EXISTS").arg(&key));
            if exists {
                assert_eq!(encoding(con, &key), "intset");
            }
        }
    });
}

#[test]
fn bad_input_writes_nothing() {
    for text in [
        "12a",
        "",
        "007",
        "-0",
        "+5",
        " 5",
        "9223372036854775808",
        "1.5",
    ] {
        assert!(
            matches!(
                VisitCounter::parse_member(text).map_err(Error::into_kind),
                Err(ErrorKind::InvalidArgument { .. })
            ),
            "{text:?}"
        );
    }
    assert_eq!(
        VisitCounter::parse_member("-9223372036854775808").unwrap(),
        i64::MIN
    );
    assert_eq!(VisitCounter::parse_member("0").unwrap(), 0);
    assert!(redis_patterns::keys::Prefix::new("").is_err());
    assert!(VisitCounter::new("", Utc, 4).is_err());
    assert!(VisitCounter::new("a{b", Utc, 4).is_err());
    assert!(VisitCounter::new("x", Utc, 0).is_err());
    assert!(visits::ShardPlan::plan_shards(0, 512).is_err());
    let grace = |d: Duration| {
        VisitCounter::builder("bad", Utc, 4)
            .retention(Retention::After(d))
            .build()
    };
    assert!(grace(Duration::from_millis(1500)).is_err());
    assert!(grace(Duration::from_secs(367 * 86_400)).is_err());
    assert!(grace(Duration::from_secs(366 * 86_400)).is_ok());

    let server = support::server();
    support::each_driver(&server, |d| {
        let mut con = server.connection();
        let c = VisitCounter::new("bad", Utc, 4).unwrap();
        // Refused before anything is sent.
        is_kind(d.run(visits::ShardPlan::planned_shards(0)), invalid);
        is_kind(d.run(c.distinct_over(&[])), invalid);

        // A non-integer member sent straight to the script (as another
        // language would): BADARG, typed, nothing written.
        let script = redis_patterns::ScriptInfo::by_name("visits.add").unwrap();
        support::script_load(&mut con, script);
        for member in ["abc", "007", "12 ", "99999999999999999999"] {
            let reply: redis::RedisResult<redis::Value> = redis::cmd("EVALSHA")
                .arg(script.sha1)
                .arg(2)
                .arg(c.counter_key(day(2099, 1, 1)))
                .arg(c.shard_key(day(2099, 1, 1), 0))
                .arg(0)
                .arg(0)
                .arg(member)
                .query(&mut con);
            let err = reply.unwrap_err();
            assert_eq!(err.code(), Some("BADARG"), "{member:?}");
        }
        // visits.contains refuses exactly what visits.add refuses (one header
        // type, one generated check), e.g. a member beyond int64.
        let contains = redis_patterns::ScriptInfo::by_name("visits.contains").unwrap();
        support::script_load(&mut con, contains);
        for member in [
            "abc",
            "007",
            "12 ",
            "99999999999999999999",
            "18446744073709551617",
            "9223372036854775808",
            "-0",
            "",
        ] {
            let reply: redis::RedisResult<redis::Value> = redis::cmd("EVALSHA_RO")
                .arg(contains.sha1)
                .arg(2)
                .arg(c.counter_key(day(2099, 1, 1)))
                .arg(c.shard_key(day(2099, 1, 1), 0))
                .arg(member)
                .query(&mut con);
            let err = reply.unwrap_err();
            assert_eq!(err.code(), Some("BADARG"), "{member:?}");
            assert_eq!(
                err.detail(),
                Some("member must be a canonical decimal int64"),
                "{member:?}"
            );
        }
        for member in ["9223372036854775807", "-9223372036854775808", "0", "-1"] {
            let reply: Vec<i64> = redis::cmd("EVALSHA_RO")
                .arg(contains.sha1)
                .arg(2)
                .arg(c.counter_key(day(2099, 1, 1)))
                .arg(c.shard_key(day(2099, 1, 1), 0))
                .arg(member)
                .query(&mut con)
                .unwrap();
            assert_eq!(reply, [0, 0], "{member:?}");
        }
        let batch = redis_patterns::scripts::visits::add_batch(
            &c.counter_key(day(2099, 1, 1)),
            &c.meta_key(day(2099, 1, 1)),
            &[c.shard_key(day(2099, 1, 1), 0)],
            0,
            0,
            4,
            &[3, 1, 2],
        );
        assert!(matches!(
            d.run(batch).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument {
                script: Some(_),
                ..
            })
        ));
        // A day whose end already passed: the script refuses before writing.
        match d.run(c.add(day(2020, 1, 1), 1)).map_err(Error::into_kind) {
            Err(ErrorKind::DayEnded { .. }) => {}
            other => panic!("expected DayEnded, got {other:?}"),
        }
        is_kind(d.run(c.add_batch(day(2020, 1, 1), &[1, 2])), day_ended);
        assert_eq!(support::dbsize(&mut con), 0);
        // Without expiry and without a late window, history can be backfilled.
        let keep = VisitCounter::builder("bad", Utc, 4)
            .retention(Retention::Forever)
            .late_window(None)
            .build()
            .unwrap();
        assert!(d.run(keep.add(day(2020, 1, 1), 1)).unwrap().new.unwrap());
        let key = keep.counter_key(day(2020, 1, 1));
        let ttl: i64 = d.cmd(&key, redis::cmd("TTL").arg(&key));
        assert_eq!(ttl, -1);
    });
}

/// Every public operation of a counter, with the answers checked against a
/// model and returned so that one server and a cluster can be compared. The
/// days have different hash tags, so on a cluster they land on different
/// nodes.
fn exercise(con: &mut Driver, c: &VisitCounter<Utc>) -> Vec<String> {
    let days = [day(2099, 12, 30), day(2099, 12, 31), day(2100, 1, 1)];
    let mut out = Vec::new();
    let mut model: Vec<HashSet<i64>> = vec![HashSet::new(); days.len()];
    // add / add_at
    let v = con.run(c.add(days[0], 1001)).unwrap();
    assert_eq!((v.new, v.count), (Some(true), 1));
    model[0].insert(1001);
    let at = Utc.with_ymd_and_hms(2099, 12, 31, 23, 59, 59).unwrap();
    let v = con.run(c.add_at(&at, 1001)).unwrap();
    assert_eq!((v.new, v.count), (Some(true), 1));
    model[1].insert(1001);
    out.push(format!("{v:?}"));
    // add_pipelined: repeats within the call are new once.
    let p = con
        .run(c.add_pipelined(days[0], &[1001, 7, 7, -3, 0]))
        .unwrap();
    let flags: Vec<bool> = p.iter().map(|v| v.new.unwrap()).collect();
    assert_eq!(flags, [false, true, false, true, true]);
    model[0].extend([7, -3, 0]);
    assert_eq!(p.last().unwrap().count, model[0].len() as u64);
    out.push(format!("{p:?}"));
    // add_batch (and an empty batch, which only reads the count)
    for (i, d) in days.iter().enumerate() {
        let members: Vec<i64> = (i as i64 * 100..i as i64 * 100 + 250).collect();
        let b = con.run(c.add_batch(*d, &members)).unwrap();
        let new_expected: Vec<bool> = members.iter().map(|m| !model[i].contains(m)).collect();
        model[i].extend(&members);
        assert_eq!(sure(&b.new), new_expected);
        assert_eq!(b.count, model[i].len() as u64);
        out.push(format!("{b:?}"));
    }
    let empty = con.run(c.add_batch(days[2], &[])).unwrap();
    assert_eq!((empty.count, empty.new.len()), (model[2].len() as u64, 0));
    // count, contains, shard_sizes
    for (i, d) in days.iter().enumerate() {
        assert_eq!(con.run(c.count(*d)).unwrap(), model[i].len() as u64);
        let sizes = con.run(c.shard_sizes(*d)).unwrap();
        assert_eq!(sizes.len(), c.shards() as usize);
        assert_eq!(sizes.iter().sum::<u64>(), model[i].len() as u64);
        out.push(format!("{sizes:?}"));
    }
    assert!(con.run(c.contains(days[0], -3)).unwrap());
    assert!(!con.run(c.contains(days[1], -3)).unwrap());
    assert!(con.run(c.contains(days[2], 349)).unwrap());
    // distinct_over / distinct_between: the union over days on several nodes.
    let union = |ix: &[usize]| -> u64 {
        ix.iter()
            .flat_map(|&i| model[i].iter().copied())
            .collect::<HashSet<i64>>()
            .len() as u64
    };
    assert_eq!(con.run(c.distinct_over(&days)).unwrap(), union(&[0, 1, 2]));
    assert_eq!(
        con.run(c.distinct_over(&[days[2], days[0]])).unwrap(),
        union(&[0, 2])
    );
    assert_eq!(
        con.run(c.distinct_between(days[0], days[2])).unwrap(),
        union(&[0, 1, 2])
    );
    assert_eq!(
        con.run(c.distinct_between(days[1], days[2])).unwrap(),
        union(&[1, 2])
    );
    out.push(format!("{}", union(&[0, 1, 2])));
    // Expiry at the end of each day plus the default grace, on the counter
    // and every shard in use.
    for d in days {
        let end = c.end_of_day(d).unwrap().timestamp() + 2 * 86_400;
        let sizes = con.run(c.shard_sizes(d)).unwrap();
        let used = (0..c.shards()).filter(|&i| sizes[i as usize] > 0);
        let keys: Vec<String> = std::iter::once(c.counter_key(d))
            .chain(used.map(|i| c.shard_key(d, i)))
            .collect();
        assert!(keys.len() > 1);
        for key in keys {
            assert_eq!(expiretime(con, &key), end, "{key}");
        }
    }
    // planned reads set-max-intset-entries from a node.
    let (planned, _) = con.run(VisitCounter::planned("plan", Utc, 10_000)).unwrap();
    assert_eq!(
        planned.shards(),
        visits::ShardPlan::plan_shards(10_000, 512).unwrap()
    );
    out
}

/// More adds (single, pipelined, batched, empty batch) on other days.
fn exercise_more(con: &mut Driver, c: &VisitCounter<Utc>) -> Vec<String> {
    let days = [day(2099, 3, 1), day(2099, 3, 2)];
    let mut out = Vec::new();
    let v = con.run(c.add(days[0], 5)).unwrap();
    assert_eq!((v.new, v.count), (Some(true), 1));
    let v = con.run(c.add(days[1], 5)).unwrap();
    assert_eq!((v.new, v.count), (Some(true), 1));
    let p = con.run(c.add_pipelined(days[0], &[5, 6, 6, 7])).unwrap();
    let flags: Vec<bool> = p.iter().map(|v| v.new.unwrap()).collect();
    assert_eq!(flags, [false, true, false, true]);
    assert_eq!(p.last().unwrap().count, 3);
    out.push(format!("{p:?}"));
    let b = con.run(c.add_batch(days[1], &[1, 2, 5, 2, 3])).unwrap();
    assert_eq!(sure(&b.new), [true, true, false, false, true]);
    assert_eq!(b.count, 4);
    out.push(format!("{b:?}"));
    let empty = con.run(c.add_batch(days[0], &[])).unwrap();
    assert_eq!((empty.count, empty.new.len()), (3, 0));
    out
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    // The same operations on one server, as the reference.
    let server = support::server();
    let c = VisitCounter::new("site", Utc, 16).unwrap();
    let reference = Mutex::new(Vec::new());
    support::each_driver(&server, |d| {
        assert!(!d.is_cluster());
        let out = [exercise(d, &c), exercise_more(d, &c)];
        reference.lock().unwrap().push(out);
    });
    let single_keys = support::dbsize(&mut server.connection());

    let cluster = support::cluster();
    let on_cluster = Mutex::new(Vec::new());
    support::each_cluster_driver(&cluster, |d| {
        assert!(d.is_cluster());
        // Refusals are typed on a cluster too, and write nothing.
        is_kind(d.run(c.add(day(2020, 1, 1), 1)), day_ended);
        is_kind(d.run(c.add_pipelined(day(2020, 1, 1), &[1, 2])), day_ended);
        is_kind(
            d.run(c.distinct_between(day(2099, 1, 2), day(2099, 1, 1))),
            invalid,
        );
        for node in cluster.nodes() {
            assert_eq!(support::dbsize(&mut node.connection()), 0);
        }
        let out = [exercise(d, &c), exercise_more(d, &c)];
        on_cluster.lock().unwrap().push(out);
    });
    assert_eq!(
        on_cluster.into_inner().unwrap(),
        reference.into_inner().unwrap()
    );
    // The days really are spread over the nodes.
    let per_node = support::keys_spread(&cluster);
    assert_eq!(
        per_node.iter().sum::<i64>(),
        single_keys,
        "the same keys as on one server"
    );
}

/// A week of 47 shards (329 shard sets) is one batch — one pipeline per node
/// — and 300 shards take one batch per chunk of about 512 sets; the other
/// many-key operations are one batch each.
fn union_round_trips(d: &mut Driver) {
    let week: Vec<NaiveDate> = (0..7).map(|i| day(2099, 8, 1 + i)).collect();
    for (shards, batches) in [(47u32, 1usize), (300, 5)] {
        let c = VisitCounter::new(&format!("rt{shards}"), Utc, shards).unwrap();
        let mut model = HashSet::new();
        for (i, d0) in week.iter().enumerate() {
            let ms: Vec<i64> = (i as i64 * 300..i as i64 * 300 + 1_000).collect();
            let (_, sent) = counted(d, c.add_batch(*d0, &ms));
            assert_eq!(sent, 1);
            let (_, sent) = counted(d, c.add_pipelined(*d0, &ms[..100]));
            assert_eq!(sent, 1);
            model.extend(ms);
        }
        let (sizes, sent) = counted(d, c.shard_sizes(week[0]));
        assert_eq!((sizes.len(), sent), (shards as usize, 1));
        let (n, sent) = counted(d, c.distinct_over(&week));
        assert_eq!(n, model.len() as u64, "{} {shards}", d.name());
        assert_eq!(sent, batches, "{} {shards}", d.name());
    }
}

#[test]
fn the_union_sends_one_batch_per_chunk_on_a_server_and_a_cluster() {
    support::on_server_and_cluster(union_round_trips);
}
