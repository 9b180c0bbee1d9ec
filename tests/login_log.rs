//! `login_log`: the PHP login-log recipe's monthly bitmaps and its seven
//! queries, against a real redis-server and a real cluster, across a month
//! boundary, a year boundary and Feb 29, every test body through both
//! drivers. Expected answers come from a plain in-memory model of the logins.

mod bitmap;
#[path = "support/counting.rs"]
mod counting;
mod support;

use std::collections::BTreeSet;

use bitmap::{day, invalid_argument, script_refused, uid_out_of_range};
use chrono::{Datelike, NaiveDate};
use counting::counted;
use redis_patterns::keys::{Prefix, cluster_slot};
use redis_patterns::login_log::{ActiveUser, LoginLog, ReindexCursor, ReindexOptions};
use redis_patterns::{Error, ErrorKind, Retention, scripts};
use redis_patterns_test_support::LocalServer;
use support::Driver;

/// (type, uid, day) of every recorded login.
type Model = BTreeSet<(String, u64, NaiveDate)>;

fn fixture() -> Vec<(&'static str, u64, NaiveDate)> {
    // Each user's days, in the order they are recorded; client 1001 logs
    // in twice on 2024-02-29 (the second is not the first of the day).
    let logins = [
        (
            "client",
            1001,
            "2023-12-30 2023-12-31 2024-01-01 2024-01-31 2024-02-01 \
             2024-02-28 2024-02-29 2024-03-01 2024-03-15 2024-02-29",
        ),
        ("client", 7, "2024-02-29"),
        ("client", 2000, "2024-01-31"),
        ("client", 0, "2024-01-01"),
        ("office", 1001, "2023-12-31 2024-03-01"),
        ("office", 42, "2024-02-28"),
        ("office", 9_999_999, "2024-02-01"),
    ];
    logins
        .into_iter()
        .flat_map(|(t, uid, days)| {
            days.split_whitespace()
                .map(move |d| (t, uid, d.parse().expect("a date")))
        })
        .collect()
}

/// The ranges every query is checked on: year boundary, month boundary,
/// Feb 29 alone, around Feb 29, inside a month without the edges, and one
/// spanning everything.
fn ranges() -> Vec<(NaiveDate, NaiveDate)> {
    vec![
        (day(2023, 12, 31), day(2024, 1, 1)),
        (day(2024, 1, 31), day(2024, 2, 1)),
        (day(2024, 2, 29), day(2024, 2, 29)),
        (day(2024, 2, 28), day(2024, 3, 1)),
        (day(2024, 2, 29), day(2024, 3, 1)),
        (day(2024, 1, 2), day(2024, 1, 30)),
        (day(2023, 12, 31), day(2023, 12, 31)),
        (day(2023, 11, 1), day(2024, 4, 30)),
    ]
}

/// The distinct `items`, sorted.
fn distinct<T: Ord>(items: impl Iterator<Item = T>) -> Vec<T> {
    items.collect::<BTreeSet<T>>().into_iter().collect()
}

fn record_all(dr: &mut Driver, log: &LoginLog) -> Model {
    let mut model = Model::new();
    for (t, uid, d) in fixture() {
        let first = dr.run(log.record(t, uid, d)).unwrap();
        let new = model.insert((t.to_string(), uid, d));
        assert_eq!(
            first,
            Some(new),
            "{} record({t}, {uid}, {d}) first-of-day flag",
            dr.name()
        );
    }
    model
}

fn check_all_queries(dr: &mut Driver, log: &LoginLog, model: &Model) {
    let users: BTreeSet<(String, u64)> = model.iter().map(|(t, u, _)| (t.clone(), *u)).collect();
    let in_range = |t: &str, u: u64, a: NaiveDate, b: NaiveDate| -> Vec<NaiveDate> {
        model
            .iter()
            .filter(|(mt, mu, d)| mt == t && *mu == u && *d >= a && *d <= b)
            .map(|(_, _, d)| *d)
            .collect()
    };
    for (t, u) in &users {
        // (2) every day from 2023-12-25 to 2024-03-20
        let mut d = day(2023, 12, 25);
        while d <= day(2024, 3, 20) {
            let expected = model.contains(&(t.clone(), *u, d));
            assert_eq!(
                dr.run(log.logged_in_on(t, *u, d)).unwrap(),
                expected,
                "(2) {t} {u} {d}"
            );
            d = d.succ_opt().unwrap();
        }
        // (3) months around the data
        for (y, m) in [
            (2023, 11),
            (2023, 12),
            (2024, 1),
            (2024, 2),
            (2024, 3),
            (2024, 4),
        ] {
            let days = model
                .iter()
                .filter(|(mt, mu, d)| mt == t && mu == u && d.year() == y && d.month() == m)
                .count();
            assert_eq!(
                dr.run(log.logged_in_in_month(t, *u, y, m)).unwrap(),
                days > 0,
                "(3) {t} {u} {y}-{m}"
            );
            assert_eq!(
                dr.run(log.days_in_month(t, *u, y, m)).unwrap() as usize,
                days
            );
        }
        for (a, b) in ranges() {
            let expected = in_range(t, *u, a, b);
            // (4)
            assert_eq!(
                dr.run(log.logged_in_between(t, *u, a, b)).unwrap(),
                !expected.is_empty(),
                "(4) {t} {u} {a}..{b}"
            );
            // (5) exactly the days in the range, none outside
            let days = dr.run(log.login_days(t, *u, a, b)).unwrap();
            assert!(
                days.iter().all(|d| *d >= a && *d <= b),
                "(5) {days:?} outside {a}..{b}"
            );
            assert_eq!(days, expected, "(5) {t} {u} {a}..{b}");
        }
    }
    for (a, b) in ranges() {
        // (6)
        for t in ["client", "office", "partner"] {
            let expected: Vec<u64> = distinct(
                model
                    .iter()
                    .filter(|(mt, _, d)| mt == t && *d >= a && *d <= b)
                    .map(|(_, u, _)| *u),
            );
            assert_eq!(
                dr.run(log.active_users(t, a, b)).unwrap(),
                expected,
                "(6) {t} {a}..{b}"
            );
        }
        // (7)
        let expected: Vec<ActiveUser> = distinct(
            model
                .iter()
                .filter(|(_, _, d)| *d >= a && *d <= b)
                .map(|(t, u, _)| ActiveUser {
                    user_type: t.clone(),
                    uid: *u,
                }),
        );
        assert_eq!(
            dr.run(log.all_active_users(a, b)).unwrap(),
            expected,
            "(7) {a}..{b}"
        );
    }
    // The types of the months of each range.
    for (a, b) in ranges() {
        let expected: Vec<String> = distinct(
            model
                .iter()
                .filter(|(_, _, d)| {
                    (d.year(), d.month()) >= (a.year(), a.month())
                        && (d.year(), d.month()) <= (b.year(), b.month())
                })
                .map(|(t, _, _)| t.clone()),
        );
        assert_eq!(
            dr.run(log.types_between(a, b)).unwrap(),
            expected,
            "types {a}..{b}"
        );
    }
}

/// The temporary union keys are gone.
fn no_tmp_keys(con: &mut redis::Connection) {
    let tmp: Vec<String> = redis::cmd("KEYS").arg("*tmp*").query(con).unwrap();
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[test]
fn seven_queries_single_server() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let log = LoginLog::default();
        let model = record_all(d, &log);
        check_all_queries(d, &log, &model);
        no_tmp_keys(&mut server.connection());

        // The PHP recipe's exact key layout and bit numbering.
        let bit: i64 = d.cmd(
            "loginLog_2024-02_client_1001",
            redis::cmd("GETBIT")
                .arg("loginLog_2024-02_client_1001")
                .arg(29),
        );
        assert_eq!(bit, 1);
        assert_eq!(
            log.log_key("client", 1001, day(2017, 10, 25)),
            "loginLog_2017-10_client_1001"
        );
        // No TTL by default.
        let ttl: i64 = d.cmd(
            "loginLog_2024-02_client_1001",
            redis::cmd("TTL").arg("loginLog_2024-02_client_1001"),
        );
        assert_eq!(ttl, -1);
    });
}

/// Another prefix, on one server and on a cluster (where logins whose log
/// and index are in different slots are written by two single-slot
/// scripts): the same answers, and the index and types of a month share a
/// slot.
fn seven_queries_with_prefix(d: &mut Driver, nodes: &[&redis_patterns_test_support::LocalServer]) {
    let log = LoginLog::new("ll_").unwrap();
    let model = record_all(d, &log);
    check_all_queries(d, &log, &model);
    for node in nodes {
        no_tmp_keys(&mut node.connection());
    }
    let day = day(2024, 2, 29);
    assert_eq!(
        cluster_slot(log.index_key("client", day).as_bytes()),
        cluster_slot(log.types_key(day).as_bytes())
    );
    assert_eq!(log.log_key("client", 7, day), "ll_2024-02_client_7");
}

#[test]
fn seven_queries_cluster_topology() {
    let server = support::server();
    support::each_driver(&server, |d| {
        assert!(!d.is_cluster());
        seven_queries_with_prefix(d, &[&server]);
    });
    let cluster = support::cluster();
    let nodes: Vec<_> = cluster.nodes().iter().collect();
    support::each_cluster_driver(&cluster, |d| {
        assert!(d.is_cluster());
        seven_queries_with_prefix(d, &nodes);
    });
}

/// A query over six months sends one batch (all active users: two, the
/// types then every type's months); a login is one batch on a cluster too.
#[test]
fn a_query_over_six_months_is_one_batch() {
    support::on_server_and_cluster(|d| {
        let log = LoginLog::default();
        let (a, b) = (day(2023, 11, 1), day(2024, 4, 30));
        for (t, uid, at) in [("client", 1, a), ("office", 2, b)] {
            assert_eq!(
                counted(d, log.record(t, uid, at)),
                (Some(true), 1),
                "{}",
                d.name()
            );
        }
        assert_eq!(
            counted(d, log.logged_in_between("client", 1, a, b)),
            (true, 1)
        );
        assert_eq!(counted(d, log.login_days("client", 1, a, b)), (vec![a], 1));
        assert_eq!(counted(d, log.active_users("office", a, b)), (vec![2], 1));
        assert_eq!(counted(d, log.types_between(a, b)).1, 1);
        let (all, sends) = counted(d, log.all_active_users(a, b));
        assert_eq!((all.len(), sends), (2, 2), "{}", d.name());
    });
}

#[test]
fn reads_data_written_by_the_php_recipe() {
    support::on_server(|d| {
        // The recipe's own command: SETBIT loginLog_2017-10_client_1001 25 1
        let _: i64 = d.cmd(
            "loginLog_2017-10_client_1001",
            redis::cmd("SETBIT")
                .arg("loginLog_2017-10_client_1001")
                .arg(25)
                .arg(1),
        );
        let log = LoginLog::default();
        assert!(
            d.run(log.logged_in_on("client", 1001, day(2017, 10, 25)))
                .unwrap()
        );
        assert!(
            !d.run(log.logged_in_on("client", 1001, day(2017, 10, 24)))
                .unwrap()
        );
        assert!(
            d.run(log.logged_in_in_month("client", 1001, 2017, 10))
                .unwrap()
        );
        assert_eq!(
            d.run(log.login_days("client", 1001, day(2017, 9, 1), day(2017, 11, 30)))
                .unwrap(),
            vec![day(2017, 10, 25)]
        );
        assert!(
            d.run(log.login_days("client", 1001, day(2017, 10, 26), day(2017, 10, 31)))
                .unwrap()
                .is_empty()
        );
    });
}

#[test]
fn retention_sets_expireat_from_the_period_end() {
    support::on_server(|d| {
        let log = LoginLog::builder()
            .retention(Retention::days(40))
            .build()
            .unwrap();
        let at = day(2099, 12, 31);
        d.run(log.record("client", 5, at)).unwrap();
        let et = |d: &mut Driver, key: String| -> i64 {
            d.cmd(&key, redis::cmd("EXPIRETIME").arg(&key))
        };
        let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp();
        let plus = 40 * 86_400;
        assert_eq!(
            et(d, log.log_key("client", 5, at)),
            midnight(day(2100, 1, 1)) + plus
        );
        assert_eq!(
            et(d, log.index_key("client", at)),
            midnight(day(2100, 1, 1)) + plus
        );
        // An earlier day of the month does not shorten the types set's life.
        d.run(log.record("client", 5, day(2099, 12, 1))).unwrap();
        assert_eq!(et(d, log.types_key(at)), midnight(day(2100, 1, 1)) + plus);
        assert_eq!(
            et(d, log.index_key("client", day(2099, 12, 1))),
            midnight(day(2099, 12, 2)) + plus
        );
    });
}

/// Retention 0 on 1969-12-31: both periods end at 1970-01-01 00:00 UTC, an
/// EXPIREAT of 0, which the scripts read as "no TTL": refused.
fn refuses_an_expiry_at_the_epoch(d: &mut Driver) {
    let log = LoginLog::builder()
        .retention(Retention::days(0))
        .build()
        .unwrap();
    assert!(
        invalid_argument(&d.run(log.record("client", 5, day(1969, 12, 31)))),
        "{}",
        d.name()
    );
}

#[test]
fn retention_refuses_an_expiry_at_the_epoch() {
    support::on_server_with_connection(|d, con| {
        refuses_an_expiry_at_the_epoch(d);
        assert_eq!(support::dbsize(con), 0);
        // One day more and the expiry is 1970-01-02 00:00 UTC.
        let log = LoginLog::builder()
            .retention(Retention::days(1))
            .build()
            .unwrap();
        d.run(log.record("client", 5, day(1969, 12, 31))).unwrap();
        assert_eq!(support::dbsize(con), 0, "expired at once, in the past");
    });
    let cluster = support::cluster();
    support::each_cluster_driver(&cluster, |d| {
        refuses_an_expiry_at_the_epoch(d);
        assert_eq!(support::keys_per_node(&cluster), [0, 0, 0]);
    });
}

#[test]
fn bad_input_writes_nothing() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let log = LoginLog::builder().max_uid(1_000).build().unwrap();
        let at = day(2024, 2, 29);
        match d
            .run(log.record("client", 1_001, at))
            .map_err(Error::into_kind)
        {
            Err(ErrorKind::UidOutOfRange { detail }) => {
                assert!(detail.contains("1001"), "{detail}")
            }
            other => panic!("expected UidOutOfRange, got {other:?}"),
        }
        let reply = d.run(log.record("client", 4_000_000_000, at));
        assert!(uid_out_of_range(&reply));
        for t in ["", "a_b", "a b", "{x}"] {
            assert!(invalid_argument(&d.run(log.record(t, 1, at))), "{t:?}");
        }
        assert!(LoginLog::new("").is_err());
        assert!(Prefix::new("").is_err());
        assert!(LoginLog::new("a b").is_err());
        assert!(LoginLog::builder().max_uid(1 << 32).build().is_err());
        let (a, b) = (day(2024, 3, 1), day(2024, 2, 28));
        let reply = d.run(log.logged_in_between("client", 1, a, b));
        assert!(invalid_argument(&reply));
        assert!(invalid_argument(&d.run(log.login_days("client", 1, a, b))));
        assert!(invalid_argument(&d.run(log.active_users("client", a, b))));
        assert!(invalid_argument(&d.run(log.all_active_users(a, b))));
        assert!(d.run(log.days_in_month("client", 1, 2024, 13)).is_err());

        // Straight to the script (another language): the offset trap holds.
        let reply = d.run(scripts::login_log::record(
            &log.log_key("client", 4_000_000_000, at),
            &log.index_key("client", at),
            &log.types_key(at),
            29,
            4_000_000_000,
            10_000_000,
            "client",
            0,
            0,
        ));
        assert!(uid_out_of_range(&reply), "{reply:?}");
        let reply = d.run(scripts::login_log::index(
            &log.index_key("client", at),
            &log.types_key(at),
            4_000_000_000,
            10_000_000,
            "client",
            0,
        ));
        assert!(uid_out_of_range(&reply), "{reply:?}");
        // A day out of range: the typed wrapper refuses it before sending,
        // and the script itself (sent raw) refuses it before writing.
        let key = log.log_key("client", 1, at);
        assert!(scripts::login_log::mark(&key, 32, 0).is_err());
        let reply = d.run(support::raw_call::<i64>(
            &scripts::LOGIN_LOG_MARK,
            &[&key],
            &["32", "0"],
        ));
        assert!(script_refused(&reply), "{reply:?}");
        assert_eq!(support::dbsize(&mut server.connection()), 0);
        let used = support::used_memory(&server);
        assert!(used < 100 << 20, "no large bitmap was allocated: {used}");
    });
}

/// A key's value (members sorted, for a set) and `EXPIRETIME`.
fn dump(d: &mut Driver, key: &str) -> (redis::Value, i64) {
    let ty: String = d.cmd(key, redis::cmd("TYPE").arg(key));
    let mut value: redis::Value = if ty == "set" {
        d.cmd(key, redis::cmd("SMEMBERS").arg(key))
    } else {
        d.cmd(key, redis::cmd("GET").arg(key))
    };
    if let redis::Value::Set(items) | redis::Value::Array(items) = &mut value {
        items.sort_by_key(|x| format!("{x:?}"));
    }
    let at: i64 = d.cmd(key, redis::cmd("EXPIRETIME").arg(key));
    (value, at)
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    // One server is the reference.
    let server = support::server();
    let log = LoginLog::builder()
        .retention(Retention::days(40_000))
        .build()
        .unwrap();
    let mut reference_driver = support::drivers(&server.url()).remove(0);
    let model = record_all(&mut reference_driver, &log);
    check_all_queries(&mut reference_driver, &log, &model);
    let reference = support::all_keys(&mut server.connection());

    let cluster = support::cluster();
    support::each_cluster_driver(&cluster, |d| {
        assert!(d.is_cluster(), "{}", d.name());
        // Logs, day indexes and types sets of several months: several slots.
        let logins = fixture();
        let split = logins
            .iter()
            .filter(|(t, u, at)| {
                cluster_slot(log.log_key(t, *u, *at).as_bytes())
                    != cluster_slot(log.index_key(t, *at).as_bytes())
            })
            .count();
        assert!(split > 0, "some logins write two slots");
        // Refusals are typed on a cluster too, and write nothing.
        let small = LoginLog::builder()
            .retention(Retention::days(40_000))
            .max_uid(1_000)
            .build()
            .unwrap();
        let reply = d.run(small.record("client", 1_001, day(2024, 2, 29)));
        assert!(uid_out_of_range(&reply));
        let reply = d.run(log.active_users("client", day(2024, 3, 1), day(2024, 2, 1)));
        assert!(invalid_argument(&reply));
        assert_eq!(support::keys_per_node(&cluster), [0, 0, 0]);
        // (1) record and (2)-(7) on the cluster give the model's answers.
        assert_eq!(record_all(d, &log), model);
        check_all_queries(d, &log, &model);
        // The same keys, values and expiry times as on one server, spread
        // over the nodes; no temporary key left anywhere.
        let mut on_nodes: Vec<String> = Vec::new();
        let mut used_nodes = 0;
        for node in cluster.nodes() {
            let mut n = node.connection();
            let keys = support::all_keys(&mut n);
            used_nodes += usize::from(!keys.is_empty());
            on_nodes.extend(keys);
            no_tmp_keys(&mut n);
        }
        on_nodes.sort();
        assert!(used_nodes >= 2, "keys on {used_nodes} node(s)");
        assert_eq!(on_nodes, reference);
        let mut single = d.another(&server.url());
        for key in &on_nodes {
            let (on_cluster, at) = dump(d, key);
            assert_eq!((on_cluster, at), dump(&mut single, key), "{key}");
            assert!(at > 0, "{key} has its retention");
        }
    });
}

/// Every key of the given nodes, sorted.
fn keys_of(nodes: &[&LocalServer]) -> Vec<String> {
    let mut keys: Vec<String> = nodes
        .iter()
        .flat_map(|n| support::all_keys(&mut n.connection()))
        .collect();
    keys.sort();
    keys
}

/// The months of the fixture.
const MONTHS: [(i32, u32); 4] = [(2023, 12), (2024, 1), (2024, 2), (2024, 3)];

/// Logs written before the indexes existed: the fixture recorded, then every
/// day index and types set deleted. A reindex of each month writes exactly
/// what recording the logins wrote (values and expiry), queries (6) and
/// (7) answer as before, keys of another layout are skipped, and a second
/// run sets nothing new.
fn reindex_rebuilds_what_record_wrote(d: &mut Driver, nodes: &[&LocalServer]) {
    let log = LoginLog::builder()
        .retention(Retention::days(40_000))
        .build()
        .unwrap();
    let model = record_all(d, &log);
    let indexes: Vec<String> = keys_of(nodes)
        .into_iter()
        .filter(|k| k.contains('{'))
        .collect();
    assert!(indexes.len() > 10, "{indexes:?}");
    let before: Vec<_> = indexes.iter().map(|k| dump(d, k)).collect();
    for k in &indexes {
        let _: i64 = d.cmd(k, redis::cmd("DEL").arg(k));
    }
    let feb = (day(2024, 2, 1), day(2024, 2, 29));
    assert!(
        d.run(log.active_users("client", feb.0, feb.1))
            .unwrap()
            .is_empty()
    );
    assert!(
        d.run(log.all_active_users(feb.0, feb.1))
            .unwrap()
            .is_empty()
    );
    // Keys the month's pattern matches that are no log of this layout, and
    // one that is no string.
    for key in [
        "loginLog_2024-02_bad_type_1",
        "loginLog_2024-02_client_007",
        "loginLog_2024-02_client_99999999999",
    ] {
        let _: i64 = d.cmd(key, redis::cmd("SETBIT").arg(key).arg(3).arg(1));
    }
    let hash = "loginLog_2024-02_client_5";
    let _: i64 = d.cmd(hash, redis::cmd("HSET").arg(hash).arg("f").arg("v"));

    let logs: BTreeSet<(String, u64, (i32, u32))> = model
        .iter()
        .map(|(t, u, at)| (t.clone(), *u, (at.year(), at.month())))
        .collect();
    let mut total = (0, 0, 0, 0);
    for (y, m) in MONTHS {
        let options = ReindexOptions {
            count: 2,
            ..ReindexOptions::default()
        };
        let r = d.run(log.reindex(y, m, options)).unwrap();
        assert!(r.cursor.is_done(), "{}", d.name());
        let nodes_in_cursor = r.cursor.to_string().split(',').count();
        assert_eq!(nodes_in_cursor, if d.is_cluster() { 3 } else { 1 });
        total = (
            total.0 + r.logs,
            total.1 + r.days,
            total.2 + r.new,
            total.3 + r.skipped,
        );
    }
    let n = model.len() as u64;
    assert_eq!(total, (logs.len() as u64, n, n, 3), "{}", d.name());
    let after: Vec<_> = indexes.iter().map(|k| dump(d, k)).collect();
    assert_eq!(after, before, "{}: what record wrote", d.name());
    assert_eq!(
        keys_of(nodes).iter().filter(|k| k.contains('{')).count(),
        indexes.len(),
        "no other index key"
    );
    check_all_queries(d, &log, &model);

    // Page by page, the cursor saved as text between pages: nothing new.
    let mut cursor = ReindexCursor::start();
    let (mut pages, mut days, mut new) = (0, 0, 0);
    while !cursor.is_done() {
        let page = d.run(log.reindex_page(2024, 2, &cursor, 1)).unwrap();
        (days, new) = (days + page.days, new + page.new);
        cursor = page.cursor.to_string().parse().unwrap();
        pages += 1;
        assert!(pages < 1_000, "a reindex ends");
    }
    let in_feb = model.iter().filter(|(_, _, at)| at.month() == 2).count() as u64;
    assert_eq!(
        (days, new),
        (in_feb, 0),
        "{}: a second run sets nothing new",
        d.name()
    );
    assert!(pages > 1, "{pages} pages");
}

#[test]
fn reindex_builds_the_day_indexes_from_existing_logs() {
    let server = support::server();
    support::each_driver(&server, |d| {
        reindex_rebuilds_what_record_wrote(d, &[&server])
    });
    let cluster = support::cluster();
    let nodes: Vec<&LocalServer> = cluster.nodes().iter().collect();
    support::each_cluster_driver(&cluster, |d| reindex_rebuilds_what_record_wrote(d, &nodes));
}

#[test]
fn reindex_resumes_from_a_cursor_and_refuses_bad_input() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let log = LoginLog::default();
        // 50 users of the PHP recipe's layout, logged in on days 1 and 15.
        for uid in 0..50u64 {
            let key = format!("loginLog_2017-10_client_{uid}");
            let _: i64 = d.cmd(&key, redis::cmd("SETBIT").arg(&key).arg(1).arg(1));
            let _: i64 = d.cmd(&key, redis::cmd("SETBIT").arg(&key).arg(15).arg(1));
        }
        // Two pages, then the rest from their cursor.
        let mut cursor = ReindexCursor::start();
        let mut done_days = 0;
        for _ in 0..2 {
            let page = d.run(log.reindex_page(2017, 10, &cursor, 5)).unwrap();
            done_days += page.days;
            cursor = page.cursor;
        }
        assert!(!cursor.is_done() && done_days > 0, "{cursor}");
        let options = ReindexOptions {
            count: 5,
            start: cursor,
        };
        let rest = d.run(log.reindex(2017, 10, options)).unwrap();
        assert_eq!(done_days + rest.days, 100, "{}", d.name());
        let active = d
            .run(log.active_users("client", day(2017, 10, 1), day(2017, 10, 31)))
            .unwrap();
        assert_eq!(active, (0..50).collect::<Vec<u64>>());
        let only_15th = d
            .run(log.active_users("client", day(2017, 10, 15), day(2017, 10, 15)))
            .unwrap();
        assert_eq!(only_15th.len(), 50);
        // A finished cursor does nothing more.
        let again = d.run(log.reindex_page(2017, 10, &rest.cursor, 5)).unwrap();
        assert_eq!((again.logs, again.days), (0, 0));
        // Refused before anything is sent.
        for (y, m, count) in [(2017, 13, 5), (2017, 10, 0)] {
            let e = d
                .run(log.reindex_page(y, m, &ReindexCursor::start(), count))
                .unwrap_err();
            assert!(e.is_invalid_input(), "{e}");
        }
        for bad in ["", "x", "server@", "@5", "server@-1"] {
            assert!(bad.parse::<ReindexCursor>().is_err(), "{bad:?}");
        }
        assert_eq!(
            "0".parse::<ReindexCursor>().unwrap(),
            ReindexCursor::start()
        );
    });
}
