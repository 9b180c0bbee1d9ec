//! `signin`: daily sign-in bitmaps against a real redis-server and a real
//! cluster, every test body through both drivers.

mod bitmap;
#[path = "support/counting.rs"]
mod counting;
mod support;

use std::collections::{BTreeMap, BTreeSet};

use bitmap::{day, invalid_argument, script_refused, uid_out_of_range};
use chrono::NaiveDate;
use counting::counted;
use redis_patterns::keys::{Prefix, cluster_slot};
use redis_patterns::signin::{SignIn, SignInBuilder};
use redis_patterns::{Error, ErrorKind, Op, Retention, scripts};
use redis_patterns_test_support::LocalServer;
use support::Driver;

/// A sign-in builder with the key prefix `prefix`.
fn prefixed(prefix: &str) -> SignInBuilder {
    SignIn::builder().prefix(Prefix::new(prefix).unwrap())
}

/// A driver of `d`'s kind on `server`, emptied first: the one-server
/// reference of a cluster test.
fn emptied(server: &LocalServer, d: &Driver) -> Driver {
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut server.connection())
        .unwrap();
    d.another(&server.url())
}

fn tmp_keys(node: &LocalServer) -> Vec<String> {
    redis::cmd("KEYS")
        .arg("*tmp*")
        .query(&mut node.connection())
        .unwrap()
}

#[test]
fn the_php_recipes_example() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let s = SignIn::new("sign:").unwrap();
        // setbit 20220320 100 1; setbit 20220320 200 1; setbit 20220321 100 1; setbit 20220321 300 1
        let (d20, d21) = (day(2022, 3, 20), day(2022, 3, 21));
        assert_eq!(d.run(s.sign_in(100, d20)).unwrap(), Some(true));
        assert_eq!(d.run(s.sign_in(200, d20)).unwrap(), Some(true));
        assert_eq!(d.run(s.sign_in(100, d21)).unwrap(), Some(true));
        assert_eq!(d.run(s.sign_in(300, d21)).unwrap(), Some(true));
        // The recipe's trap: setting an existing bit again answers 1 (here: not first).
        assert_eq!(d.run(s.sign_in(100, d20)).unwrap(), Some(false));
        assert_eq!(s.key(d20), "sign:20220320");
        let raw: i64 = d.cmd(
            "sign:20220320",
            redis::cmd("GETBIT").arg("sign:20220320").arg(100),
        );
        assert_eq!(raw, 1);
        assert!(d.run(s.signed_in(100, d20)).unwrap());
        assert!(!d.run(s.signed_in(300, d20)).unwrap());
        assert_eq!(d.run(s.count(d20)).unwrap(), 2);
        assert_eq!(d.run(s.active_any(d20, d21)).unwrap(), vec![100, 200, 300]);
        assert_eq!(d.run(s.active_every(d20, d21)).unwrap(), vec![100]);
        assert_eq!(d.run(s.count_any(d20, d21)).unwrap(), 3);
        assert_eq!(d.run(s.count_every(d20, d21)).unwrap(), 1);
        // A day nobody signed in empties the intersection.
        assert!(
            d.run(s.active_every(d20, day(2022, 3, 22)))
                .unwrap()
                .is_empty()
        );
        let ttl: i64 = d.cmd("sign:20220320", redis::cmd("TTL").arg("sign:20220320"));
        assert_eq!(ttl, -1, "no TTL by default");
        assert!(tmp_keys(&server).is_empty());
    });
}

#[test]
fn reads_the_php_recipes_bare_date_keys() {
    let server = support::server();
    support::each_driver(&server, |d| {
        // The recipe's own commands, on bare dates.
        for (key, uid) in [("20220320", 100), ("20220320", 200), ("20220321", 100)] {
            let _: i64 = d.cmd(key, redis::cmd("SETBIT").arg(key).arg(uid).arg(1));
        }
        let s = SignIn::builder().prefix(Prefix::none()).build().unwrap();
        let (d20, d21) = (day(2022, 3, 20), day(2022, 3, 21));
        assert_eq!(s.key(d20), "20220320");
        assert!(d.run(s.signed_in(200, d20)).unwrap());
        assert!(!d.run(s.signed_in(200, d21)).unwrap());
        assert_eq!(d.run(s.count(d20)).unwrap(), 2);
        assert_eq!(d.run(s.active_every(d20, d21)).unwrap(), vec![100]);
        assert_eq!(d.run(s.count_any(d20, d21)).unwrap(), 2);
        assert_eq!(d.run(s.sign_in(300, d21)).unwrap(), Some(true));
        let raw: i64 = d.cmd("20220321", redis::cmd("GETBIT").arg("20220321").arg(300));
        assert_eq!(raw, 1, "written where the recipe reads it");
        assert!(tmp_keys(&server).is_empty());
        let mut keys = support::all_keys(&mut server.connection());
        keys.sort();
        assert_eq!(keys, ["20220320", "20220321"]);
    });
}

fn model_check(d: &mut Driver, s: &SignIn) {
    // Sign-ins over a year boundary and Feb 29.
    let mut model: BTreeMap<NaiveDate, BTreeSet<u64>> = BTreeMap::new();
    let days: Vec<NaiveDate> = day(2023, 12, 28)
        .iter_days()
        .take_while(|d| *d <= day(2024, 3, 2))
        .collect();
    for (i, at) in days.iter().enumerate() {
        // A day's sign-ins joined: one round trip.
        let mut sign_ins = Vec::new();
        for uid in [1u64, 2, 3, 50, 4_095, 9_000_000] {
            // uid 1 every day; others on a pattern
            if uid == 1 || (i as u64 + uid).is_multiple_of(uid % 5 + 2) {
                sign_ins.push(s.sign_in(uid, *at));
                model.entry(*at).or_default().insert(uid);
            }
        }
        let first = d.run(Op::join(sign_ins)).unwrap();
        assert!(
            first.iter().all(|f| *f == Some(true)),
            "{at}: every sign-in is the day's first"
        );
    }
    let ranges = [
        (day(2023, 12, 30), day(2024, 1, 2)),
        (day(2024, 2, 28), day(2024, 3, 1)),
        (day(2024, 2, 29), day(2024, 2, 29)),
        (day(2023, 12, 28), day(2024, 3, 2)),
    ];
    for (a, b) in ranges {
        let in_range: Vec<&BTreeSet<u64>> = model.range(a..=b).map(|(_, v)| v).collect();
        let any: BTreeSet<u64> = in_range.iter().copied().flatten().copied().collect();
        let every: BTreeSet<u64> = any
            .iter()
            .copied()
            .filter(|u| in_range.iter().all(|set| set.contains(u)))
            .collect();
        assert_eq!(
            d.run(s.active_any(a, b)).unwrap(),
            any.iter().copied().collect::<Vec<_>>(),
            "{a}..{b}"
        );
        assert_eq!(
            d.run(s.active_every(a, b)).unwrap(),
            every.iter().copied().collect::<Vec<_>>(),
            "{a}..{b}"
        );
        assert_eq!(d.run(s.count_any(a, b)).unwrap(), any.len() as u64);
        assert_eq!(d.run(s.count_every(a, b)).unwrap(), every.len() as u64);
        for uid in [1u64, 3, 50] {
            let expected: Vec<NaiveDate> = model
                .range(a..=b)
                .filter(|(_, v)| v.contains(&uid))
                .map(|(d, _)| *d)
                .collect();
            assert_eq!(d.run(s.days_signed_in(uid, a, b)).unwrap(), expected);
        }
    }
    for at in &days {
        assert_eq!(d.run(s.count(*at)).unwrap(), model[at].len() as u64);
        for uid in [1u64, 3, 50, 9_000_000, 9_000_001] {
            assert_eq!(
                d.run(s.signed_in(uid, *at)).unwrap(),
                model[at].contains(&uid),
                "{uid} {at}"
            );
        }
    }
    // uid 1 signed in every day: one streak over the whole span.
    let st = d.run(s.streak(1, days[0], *days.last().unwrap())).unwrap();
    assert_eq!(st.longest as usize, days.len());
    assert_eq!(st.current as usize, days.len());
    assert_eq!(st.longest_ends, Some(*days.last().unwrap()));
}

#[test]
fn ranges_in_one_script_with_a_tagged_prefix() {
    let server = support::server();
    let cluster = support::cluster();
    let tagged = SignIn::builder().tag("app").build().unwrap();
    assert_eq!(tagged.key(day(2024, 1, 1)), "signin:{app}:20240101");
    support::each_driver(&server, |d| {
        model_check(d, &tagged);
        // The range scripts (signin.combine, signin.count) leave no temporary key.
        assert_eq!(tmp_keys(&server), Vec::<String>::new());
    });
    support::each_cluster_driver(&cluster, |d| {
        model_check(d, &tagged);
        for node in cluster.nodes() {
            assert_eq!(tmp_keys(node), Vec::<String>::new());
        }
        let on_nodes: Vec<usize> = cluster
            .nodes()
            .iter()
            .map(|n| support::all_keys(&mut n.connection()).len())
            .collect();
        assert_eq!(on_nodes.iter().filter(|&&n| n > 0).count(), 1, "one slot");
    });
}

#[test]
fn ranges_client_side_on_a_cluster_without_tag() {
    let server = support::server();
    let cluster = support::cluster();
    let s = SignIn::new("signin:").unwrap();
    support::each_cluster_driver(&cluster, |d| {
        model_check(d, &s);
        // The same data on one server, where the ranges run in the script.
        let mut standalone = emptied(&server, d);
        model_check(&mut standalone, &s);
        let (a, b) = (day(2023, 12, 30), day(2024, 1, 2));
        assert_eq!(
            standalone.run(s.active_every(a, b)).unwrap(),
            d.run(s.active_every(a, b)).unwrap()
        );
        // The count in the script (one server) agrees with the client-side count.
        for (a, b) in [(a, b), (day(2023, 12, 28), day(2024, 3, 2))] {
            assert_eq!(
                standalone.run(s.count_any(a, b)).unwrap(),
                d.run(s.count_any(a, b)).unwrap()
            );
            assert_eq!(
                standalone.run(s.count_every(a, b)).unwrap(),
                d.run(s.count_every(a, b)).unwrap()
            );
        }
    });
}

/// A range is one batch: one script call (a tag, or one server), or every
/// day's GET (untagged days on a cluster); a user's days one batch of GETBITs.
#[test]
fn a_range_is_one_batch() {
    support::on_server_and_cluster(|d| {
        let (a, b) = (day(2024, 2, 20), day(2024, 3, 1));
        for s in [
            SignIn::default(),
            SignIn::builder().tag("app").build().unwrap(),
        ] {
            d.run(s.sign_in(7, a)).unwrap();
            assert_eq!(
                counted(d, s.active_every(a, b)),
                (vec![], 1),
                "{}",
                d.name()
            );
            assert_eq!(counted(d, s.active_any(a, b)), (vec![7], 1));
            assert_eq!(counted(d, s.count_any(a, b)), (1, 1));
            assert_eq!(counted(d, s.days_signed_in(7, a, b)), (vec![a], 1));
            assert_eq!(counted(d, s.streak(7, a, b)).1, 1);
        }
    });
}

#[test]
fn streaks() {
    support::on_server(|d| {
        let s = SignIn::new("st:").unwrap();
        let start = day(2024, 2, 26);
        // Runs: Feb 26-27 (2), Feb 29..Mar 4 (5, across the leap day), Mar 6 (1).
        let offsets = [0, 1, 3, 4, 5, 6, 7, 9];
        for o in offsets {
            d.run(s.sign_in(77, start + chrono::Days::new(o))).unwrap();
        }
        let st = d.run(s.streak(77, start, day(2024, 3, 6))).unwrap();
        assert_eq!(st.longest, 5);
        assert_eq!(st.longest_ends, Some(day(2024, 3, 4)));
        assert_eq!(st.current, 1);
        let st = d.run(s.streak(77, start, day(2024, 3, 5))).unwrap();
        assert_eq!((st.longest, st.current), (5, 0));
        let st = d
            .run(s.streak(77, day(2024, 3, 1), day(2024, 3, 4)))
            .unwrap();
        assert_eq!((st.longest, st.current), (4, 4));
        let none = d.run(s.streak(78, start, day(2024, 3, 6))).unwrap();
        assert_eq!(
            (none.longest, none.longest_ends, none.current),
            (0, None, 0)
        );
    });
}

#[test]
fn retention_is_optional() {
    support::on_server(|d| {
        let s = prefixed("r:")
            .retention(Retention::days(30))
            .build()
            .unwrap();
        d.run(s.sign_in(5, day(2099, 2, 28))).unwrap();
        let key = s.key(day(2099, 2, 28));
        let at: i64 = d.cmd(&key, redis::cmd("EXPIRETIME").arg(&key));
        let end = day(2099, 3, 1)
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp();
        assert_eq!(at, end + 30 * 86_400);
    });
}

#[test]
fn retention_refuses_an_expiry_at_the_epoch() {
    // retention 0 on 1969-12-31: the day ends at 1970-01-01 00:00 UTC, an
    // EXPIREAT of 0, which the script reads as "no TTL".
    let server = support::server();
    support::each_driver(&server, |d| {
        let s = prefixed("e:")
            .retention(Retention::days(0))
            .build()
            .unwrap();
        assert!(invalid_argument(&d.run(s.sign_in(5, day(1969, 12, 31)))));
        assert_eq!(support::dbsize(&mut server.connection()), 0);
    });
}

#[test]
fn bad_input_writes_nothing() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let s = prefixed("b:").max_uid(1_000_000).build().unwrap();
        match d
            .run(s.sign_in(4_000_000_000, day(2024, 1, 1)))
            .map_err(Error::into_kind)
        {
            Err(ErrorKind::UidOutOfRange { detail }) => assert!(detail.contains("4000000000")),
            other => panic!("expected UidOutOfRange, got {other:?}"),
        }
        let reply = d.run(s.sign_in(1_000_001, day(2024, 1, 1)));
        assert!(uid_out_of_range(&reply));
        assert!(d.run(s.sign_in(1_000_000, day(2024, 1, 1))).is_ok());
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut server.connection())
            .unwrap();
        for p in ["", "a b", "a{b", "a{}b", "{a}{b}", "a}b{"] {
            assert!(SignIn::new(p).is_err(), "{p:?}");
        }
        for t in ["", "a{b", "a}b", "{a}"] {
            assert!(SignIn::builder().tag(t).build().is_err(), "{t:?}");
        }
        assert!(SignIn::builder().max_uid(1 << 32).build().is_err());
        let (a, b) = (day(2024, 1, 2), day(2024, 1, 1));
        assert!(invalid_argument(&d.run(s.active_any(a, b))));
        assert!(invalid_argument(&d.run(s.active_every(a, b))));
        assert!(invalid_argument(&d.run(s.streak(1, a, b))));
        // Straight to the script (another language): the offset trap holds.
        let reply = d.run(scripts::signin::mark(
            "b:20240101",
            4_000_000_000,
            10_000_000,
            0,
        ));
        assert!(uid_out_of_range(&reply), "{reply:?}");
        // An unknown operator: the typed wrappers refuse it before sending,
        // and the scripts themselves (sent raw) refuse it before writing.
        let (keys, op) = (["b:tmp", "b:20240101"], "XOR");
        for (wrapper_refused, script) in [
            (
                scripts::signin::combine(keys[0], &keys[1..], op).is_err(),
                &scripts::SIGNIN_COMBINE,
            ),
            (
                scripts::signin::count(keys[0], &keys[1..], op).is_err(),
                &scripts::SIGNIN_COUNT,
            ),
        ] {
            assert!(wrapper_refused, "{}", script.name);
            let reply = d.run(support::raw_call::<redis::Value>(script, &keys, &[op]));
            assert!(script_refused(&reply), "{}: {reply:?}", script.name);
        }
        assert_eq!(support::dbsize(&mut server.connection()), 0);
    });
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let server = support::server();
    let cluster = support::cluster();
    // Days spread over the slots (ranges combined client-side), days sharing
    // one tag (ranges in one script), and with retention.
    let spread = SignIn::builder()
        .retention(Retention::days(40_000))
        .build()
        .unwrap();
    let tagged = SignIn::builder().tag("app").build().unwrap();
    let slots: BTreeSet<u16> = day(2024, 1, 1)
        .iter_days()
        .take(10)
        .map(|d| cluster_slot(spread.key(d).as_bytes()))
        .collect();
    assert!(slots.len() > 1, "the days of a range span slots");
    support::each_cluster_driver(&cluster, |d| {
        assert!(d.is_cluster(), "{}", d.name());
        // Refusals are typed on a cluster too, and write nothing.
        let reply = d.run(spread.sign_in(10_000_001, day(2024, 1, 1)));
        assert!(uid_out_of_range(&reply));
        let reply = d.run(spread.days_signed_in(1, day(2024, 1, 2), day(2024, 1, 1)));
        assert!(invalid_argument(&reply));
        for node in cluster.nodes() {
            assert_eq!(support::dbsize(&mut node.connection()), 0);
        }
        model_check(d, &spread);
        model_check(d, &tagged);

        // The same keys, bitmaps and expiry times as on one server.
        let mut single = emptied(&server, d);
        model_check(&mut single, &spread);
        model_check(&mut single, &tagged);
        let mut on_nodes: Vec<String> = Vec::new();
        let mut used_nodes = 0;
        for node in cluster.nodes() {
            let keys = support::all_keys(&mut node.connection());
            used_nodes += usize::from(!keys.is_empty());
            on_nodes.extend(keys);
        }
        on_nodes.sort();
        assert!(used_nodes >= 2, "keys on {used_nodes} node(s)");
        assert_eq!(
            on_nodes,
            support::all_keys(&mut server.connection()),
            "no temporary key left"
        );
        let dump = |c: &mut Driver, key: &str| -> (Vec<u8>, i64) {
            let v: Vec<u8> = c.cmd(key, redis::cmd("GET").arg(key));
            let at: i64 = c.cmd(key, redis::cmd("EXPIRETIME").arg(key));
            (v, at)
        };
        for key in &on_nodes {
            assert_eq!(dump(&mut single, key), dump(d, key), "{key}");
        }
    });
}
