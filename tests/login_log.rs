//! `login_log`: the seed's monthly login bitmaps and its seven queries,
//! against a real redis-server, across a month boundary, a year boundary and
//! Feb 29. Expected answers come from a plain in-memory model of the logins.

mod support;

use std::collections::BTreeSet;

use chrono::{Datelike, NaiveDate};
use redis_patterns::login_log::{LoginLog, Retention, Topology};
use redis_patterns::{Error, ErrorKind};

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

/// (type, uid, day) of every recorded login.
type Model = BTreeSet<(String, u64, NaiveDate)>;

fn fixture() -> Vec<(&'static str, u64, NaiveDate)> {
    vec![
        ("client", 1001, day(2023, 12, 30)),
        ("client", 1001, day(2023, 12, 31)),
        ("client", 1001, day(2024, 1, 1)),
        ("client", 1001, day(2024, 1, 31)),
        ("client", 1001, day(2024, 2, 1)),
        ("client", 1001, day(2024, 2, 28)),
        ("client", 1001, day(2024, 2, 29)),
        ("client", 1001, day(2024, 3, 1)),
        ("client", 1001, day(2024, 3, 15)),
        ("client", 1001, day(2024, 2, 29)), // a second login the same day
        ("client", 7, day(2024, 2, 29)),
        ("client", 2000, day(2024, 1, 31)),
        ("client", 0, day(2024, 1, 1)),
        ("office", 1001, day(2023, 12, 31)),
        ("office", 1001, day(2024, 3, 1)),
        ("office", 42, day(2024, 2, 28)),
        ("office", 9_999_999, day(2024, 2, 1)),
    ]
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

fn record_all<C: redis::ConnectionLike>(con: &mut C, log: &LoginLog) -> Model {
    let mut model = Model::new();
    for (t, uid, d) in fixture() {
        let first = log.record(con, t, uid, d).unwrap();
        let new = model.insert((t.to_string(), uid, d));
        assert_eq!(first, new, "record({t}, {uid}, {d}) first-of-day flag");
    }
    model
}

fn check_all_queries<C: redis::ConnectionLike>(con: &mut C, log: &LoginLog, model: &Model) {
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
                log.logged_in_on(con, t, *u, d).unwrap(),
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
                log.logged_in_in_month(con, t, *u, y, m).unwrap(),
                days > 0,
                "(3) {t} {u} {y}-{m}"
            );
            assert_eq!(log.days_in_month(con, t, *u, y, m).unwrap() as usize, days);
        }
        for (a, b) in ranges() {
            let expected = in_range(t, *u, a, b);
            // (4)
            assert_eq!(
                log.logged_in_between(con, t, *u, a, b).unwrap(),
                !expected.is_empty(),
                "(4) {t} {u} {a}..{b}"
            );
            // (5) exactly the days in the range, none outside
            let days = log.login_days(con, t, *u, a, b).unwrap();
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
            let expected: Vec<u64> = model
                .iter()
                .filter(|(mt, _, d)| mt == t && *d >= a && *d <= b)
                .map(|(_, u, _)| *u)
                .collect::<BTreeSet<u64>>()
                .into_iter()
                .collect();
            assert_eq!(
                log.active_users(con, t, a, b).unwrap(),
                expected,
                "(6) {t} {a}..{b}"
            );
        }
        // (7)
        let expected: Vec<(String, u64)> = model
            .iter()
            .filter(|(_, _, d)| *d >= a && *d <= b)
            .map(|(t, u, _)| (t.clone(), *u))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(
            log.all_active_users(con, a, b).unwrap(),
            expected,
            "(7) {a}..{b}"
        );
    }
    // The types of the months of each range.
    for (a, b) in ranges() {
        let expected: Vec<String> = model
            .iter()
            .filter(|(_, _, d)| {
                (d.year(), d.month()) >= (a.year(), a.month())
                    && (d.year(), d.month()) <= (b.year(), b.month())
            })
            .map(|(t, _, _)| t.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(
            log.types_between(con, a, b).unwrap(),
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
    let mut con = server.connection();
    let log = LoginLog::new();
    let model = record_all(&mut con, &log);
    check_all_queries(&mut con, &log, &model);
    no_tmp_keys(&mut con);

    // The seed's exact key layout and bit numbering.
    let bit: i64 = redis::cmd("GETBIT")
        .arg("loginLog_2024-02_client_1001")
        .arg(29)
        .query(&mut con)
        .unwrap();
    assert_eq!(bit, 1);
    assert_eq!(
        log.log_key("client", 1001, day(2017, 10, 25)),
        "loginLog_2017-10_client_1001"
    );
    // No TTL by default.
    let ttl: i64 = redis::cmd("TTL")
        .arg("loginLog_2024-02_client_1001")
        .query(&mut con)
        .unwrap();
    assert_eq!(ttl, -1);
}

#[test]
fn seven_queries_cluster_topology() {
    // The cluster path (log and index written by two single-slot scripts)
    // gives the same answers; keys are checked to be single-slot per call.
    let server = support::server();
    let mut con = server.connection();
    let log = LoginLog::with_prefix("ll")
        .unwrap()
        .topology(Topology::Cluster);
    let model = record_all(&mut con, &log);
    check_all_queries(&mut con, &log, &model);
    no_tmp_keys(&mut con);
    let d = day(2024, 2, 29);
    assert_eq!(
        redis_patterns::keys::cluster_slot(log.index_key("client", d).as_bytes()),
        redis_patterns::keys::cluster_slot(log.types_key(d).as_bytes())
    );
    assert_eq!(Topology::detect(&mut con).unwrap(), Topology::Standalone);
}

#[test]
fn reads_data_written_by_the_seed() {
    let server = support::server();
    let mut con = server.connection();
    // The seed's own commands: SETBIT loginLog_2017-10_client_1001 25 1
    let _: i64 = redis::cmd("SETBIT")
        .arg("loginLog_2017-10_client_1001")
        .arg(25)
        .arg(1)
        .query(&mut con)
        .unwrap();
    let log = LoginLog::new();
    assert!(
        log.logged_in_on(&mut con, "client", 1001, day(2017, 10, 25))
            .unwrap()
    );
    assert!(
        !log.logged_in_on(&mut con, "client", 1001, day(2017, 10, 24))
            .unwrap()
    );
    assert!(
        log.logged_in_in_month(&mut con, "client", 1001, 2017, 10)
            .unwrap()
    );
    assert_eq!(
        log.login_days(&mut con, "client", 1001, day(2017, 9, 1), day(2017, 11, 30))
            .unwrap(),
        vec![day(2017, 10, 25)]
    );
    assert!(
        log.login_days(
            &mut con,
            "client",
            1001,
            day(2017, 10, 26),
            day(2017, 10, 31)
        )
        .unwrap()
        .is_empty()
    );
}

#[test]
fn retention_sets_expireat_from_the_period_end() {
    let server = support::server();
    let mut con = server.connection();
    let log = LoginLog::new().retention(Retention::Days(40));
    let d = day(2099, 12, 31);
    log.record(&mut con, "client", 5, d).unwrap();
    let et = |con: &mut redis::Connection, key: String| -> i64 {
        redis::cmd("EXPIRETIME").arg(key).query(con).unwrap()
    };
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp();
    let plus = 40 * 86_400;
    assert_eq!(
        et(&mut con, log.log_key("client", 5, d)),
        midnight(day(2100, 1, 1)) + plus
    );
    assert_eq!(
        et(&mut con, log.index_key("client", d)),
        midnight(day(2100, 1, 1)) + plus
    );
    // An earlier day of the month does not shorten the types set's life.
    log.record(&mut con, "client", 5, day(2099, 12, 1)).unwrap();
    assert_eq!(
        et(&mut con, log.types_key(d)),
        midnight(day(2100, 1, 1)) + plus
    );
    assert_eq!(
        et(&mut con, log.index_key("client", day(2099, 12, 1))),
        midnight(day(2099, 12, 2)) + plus
    );
}

#[test]
fn retention_refuses_an_expiry_at_the_epoch() {
    // Days(0) on 1969-12-31: both periods end at 1970-01-01 00:00 UTC, an
    // EXPIREAT of 0, which the scripts read as "no TTL".
    let server = support::server();
    let mut con = server.connection();
    let log = LoginLog::new().retention(Retention::Days(0));
    for topology in [Topology::Standalone, Topology::Cluster] {
        let log = log.clone().topology(topology);
        assert!(
            matches!(
                log.record(&mut con, "client", 5, day(1969, 12, 31))
                    .map_err(Error::into_kind),
                Err(ErrorKind::InvalidArgument { .. })
            ),
            "{topology:?}"
        );
    }
    assert_eq!(support::dbsize(&mut con), 0);
    // One day more and the expiry is 1970-01-02 00:00 UTC.
    let log = LoginLog::new().retention(Retention::Days(1));
    log.record(&mut con, "client", 5, day(1969, 12, 31))
        .unwrap();
    assert_eq!(support::dbsize(&mut con), 0, "expired at once, in the past");
}

#[test]
fn bad_input_writes_nothing() {
    let server = support::server();
    let mut con = server.connection();
    let log = LoginLog::new().max_uid(1_000).unwrap();
    let d = day(2024, 2, 29);
    match log
        .record(&mut con, "client", 1_001, d)
        .map_err(Error::into_kind)
    {
        Err(ErrorKind::UidOutOfRange { detail }) => assert!(detail.contains("1001"), "{detail}"),
        other => panic!("expected UidOutOfRange, got {other:?}"),
    }
    let cluster = log.clone().topology(Topology::Cluster);
    assert!(matches!(
        cluster
            .record(&mut con, "client", 4_000_000_000, d)
            .map_err(Error::into_kind),
        Err(ErrorKind::UidOutOfRange { .. })
    ));
    for t in ["", "a_b", "a b", "{x}"] {
        assert!(
            matches!(
                log.record(&mut con, t, 1, d).map_err(Error::into_kind),
                Err(ErrorKind::InvalidArgument { .. })
            ),
            "{t:?}"
        );
    }
    assert!(LoginLog::with_prefix("").is_err());
    assert!(LoginLog::new().max_uid(1 << 32).is_err());
    let (a, b) = (day(2024, 3, 1), day(2024, 2, 28));
    assert!(matches!(
        log.logged_in_between(&mut con, "client", 1, a, b)
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        log.login_days(&mut con, "client", 1, a, b)
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        log.active_users(&mut con, "client", a, b)
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        log.all_active_users(&mut con, a, b)
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(log.days_in_month(&mut con, "client", 1, 2024, 13).is_err());

    // Straight to the script (another language): the offset trap holds.
    let reply = redis_patterns::scripts::login_log::record(
        &log.log_key("client", 4_000_000_000, d),
        &log.index_key("client", d),
        &log.types_key(d),
        29,
        4_000_000_000,
        10_000_000,
        "client",
        0,
        0,
    )
    .unwrap()
    .invoke(&mut con);
    assert!(
        matches!(
            reply.as_ref().map_err(Error::kind),
            Err(ErrorKind::UidOutOfRange { .. })
        ),
        "{reply:?}"
    );
    let reply = redis_patterns::scripts::login_log::index(
        &log.index_key("client", d),
        &log.types_key(d),
        4_000_000_000,
        10_000_000,
        "client",
        0,
    )
    .unwrap()
    .invoke(&mut con);
    assert!(
        matches!(
            reply.as_ref().map_err(Error::kind),
            Err(ErrorKind::UidOutOfRange { .. })
        ),
        "{reply:?}"
    );
    let key = log.log_key("client", 1, d);
    assert!(redis_patterns::scripts::login_log::mark(&key, 32, 0).is_err());
    let reply = support::raw_call::<i64>(
        &redis_patterns::scripts::LOGIN_LOG_MARK,
        &[&key],
        &["32", "0"],
    )
    .invoke(&mut con);
    assert!(
        matches!(
            reply.as_ref().map_err(Error::kind),
            Err(ErrorKind::InvalidArgument {
                script: Some(_),
                ..
            })
        ),
        "{reply:?}"
    );
    assert_eq!(support::dbsize(&mut con), 0);
    let used: u64 = {
        let info: String = redis::cmd("INFO").arg("memory").query(&mut con).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:")?.trim().parse().ok())
            .unwrap()
    };
    assert!(used < 100 << 20, "no large bitmap was allocated: {used}");
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    // One server with the default topology is the reference.
    let server = support::server();
    let mut single = server.connection();
    let reference = LoginLog::new().retention(Retention::Days(40_000));
    let model = record_all(&mut single, &reference);
    check_all_queries(&mut single, &reference, &model);

    let cluster = support::cluster();
    let mut con = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    let topology = Topology::detect(&mut con).unwrap();
    assert_eq!(topology, Topology::Cluster);
    let log = LoginLog::new()
        .retention(Retention::Days(40_000))
        .topology(topology);
    // Logs, day indexes and types sets of several months: several slots.
    let logins = fixture();
    let split = logins
        .iter()
        .filter(|(t, u, d)| {
            redis_patterns::keys::cluster_slot(log.log_key(t, *u, *d).as_bytes())
                != redis_patterns::keys::cluster_slot(log.index_key(t, *d).as_bytes())
        })
        .count();
    assert!(split > 0, "some logins write two slots");
    // Refusals are typed on a cluster too, and write nothing.
    assert!(matches!(
        log.clone()
            .max_uid(1_000)
            .unwrap()
            .record(&mut con, "client", 1_001, day(2024, 2, 29))
            .map_err(Error::into_kind),
        Err(ErrorKind::UidOutOfRange { .. })
    ));
    assert!(matches!(
        log.active_users(&mut con, "client", day(2024, 3, 1), day(2024, 2, 1))
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    for node in cluster.nodes() {
        assert_eq!(support::dbsize(&mut node.connection()), 0);
    }
    // (1) record and (2)-(7) on the cluster give the model's answers.
    assert_eq!(record_all(&mut con, &log), model);
    check_all_queries(&mut con, &log, &model);
    // The same keys, values and expiry times as on one server, spread over
    // the nodes; no temporary key left anywhere.
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
    assert_eq!(on_nodes, support::all_keys(&mut single));
    for key in &on_nodes {
        let dump = |c: &mut dyn redis::ConnectionLike| -> (redis::Value, i64) {
            let ty: String = redis::cmd("TYPE").arg(key).query(c).unwrap();
            let value = if ty == "set" {
                redis::cmd("SMEMBERS").arg(key).query(c).unwrap()
            } else {
                redis::cmd("GET").arg(key).query(c).unwrap()
            };
            let at: i64 = redis::cmd("EXPIRETIME").arg(key).query(c).unwrap();
            (value, at)
        };
        let (mut v1, at1) = dump(&mut single);
        let (mut v2, at2) = dump(&mut con);
        for v in [&mut v1, &mut v2] {
            if let redis::Value::Set(items) | redis::Value::Array(items) = v {
                items.sort_by_key(|x| format!("{x:?}"));
            }
        }
        assert_eq!((v1, at1), (v2, at2), "{key}");
        assert!(at2 > 0, "{key} has its retention");
    }
}
