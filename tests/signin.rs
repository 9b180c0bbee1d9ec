//! `signin`: daily sign-in bitmaps against a real redis-server.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use redis_patterns::signin::{SignIn, Topology};
use redis_patterns::{Error, ErrorKind};

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

#[test]
fn the_seeds_example() {
    let server = support::server();
    let mut con = server.connection();
    let s = SignIn::new("sign").unwrap();
    // setbit 20220320 100 1; setbit 20220320 200 1; setbit 20220321 100 1; setbit 20220321 300 1
    let (d20, d21) = (day(2022, 3, 20), day(2022, 3, 21));
    assert!(s.sign_in(&mut con, 100, d20).unwrap());
    assert!(s.sign_in(&mut con, 200, d20).unwrap());
    assert!(s.sign_in(&mut con, 100, d21).unwrap());
    assert!(s.sign_in(&mut con, 300, d21).unwrap());
    // The seed's trap: setting an existing bit again answers 1 (here: not first).
    assert!(!s.sign_in(&mut con, 100, d20).unwrap());
    assert_eq!(s.key(d20), "sign:20220320");
    let raw: i64 = redis::cmd("GETBIT")
        .arg("sign:20220320")
        .arg(100)
        .query(&mut con)
        .unwrap();
    assert_eq!(raw, 1);
    assert!(s.signed_in(&mut con, 100, d20).unwrap());
    assert!(!s.signed_in(&mut con, 300, d20).unwrap());
    assert_eq!(s.count(&mut con, d20).unwrap(), 2);
    assert_eq!(
        s.active_any(&mut con, d20, d21).unwrap(),
        vec![100, 200, 300]
    );
    assert_eq!(s.active_every(&mut con, d20, d21).unwrap(), vec![100]);
    assert_eq!(s.count_any(&mut con, d20, d21).unwrap(), 3);
    assert_eq!(s.count_every(&mut con, d20, d21).unwrap(), 1);
    // A day nobody signed in empties the intersection.
    assert!(
        s.active_every(&mut con, d20, day(2022, 3, 22))
            .unwrap()
            .is_empty()
    );
    let ttl: i64 = redis::cmd("TTL")
        .arg("sign:20220320")
        .query(&mut con)
        .unwrap();
    assert_eq!(ttl, -1, "no TTL by default");
    let tmp: Vec<String> = redis::cmd("KEYS").arg("*tmp*").query(&mut con).unwrap();
    assert!(tmp.is_empty());
}

fn model_check<C: redis::ConnectionLike>(con: &mut C, s: &SignIn) {
    // Sign-ins over a year boundary and Feb 29.
    let mut model: BTreeMap<NaiveDate, BTreeSet<u64>> = BTreeMap::new();
    let days: Vec<NaiveDate> = day(2023, 12, 28)
        .iter_days()
        .take_while(|d| *d <= day(2024, 3, 2))
        .collect();
    for (i, d) in days.iter().enumerate() {
        for uid in [1u64, 2, 3, 50, 4_095, 9_000_000] {
            // uid 1 every day; others on a pattern
            if uid == 1 || (i as u64 + uid).is_multiple_of(uid % 5 + 2) {
                s.sign_in(con, uid, *d).unwrap();
                model.entry(*d).or_default().insert(uid);
            }
        }
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
            s.active_any(con, a, b).unwrap(),
            any.iter().copied().collect::<Vec<_>>(),
            "{a}..{b}"
        );
        assert_eq!(
            s.active_every(con, a, b).unwrap(),
            every.iter().copied().collect::<Vec<_>>(),
            "{a}..{b}"
        );
        assert_eq!(s.count_any(con, a, b).unwrap(), any.len() as u64);
        assert_eq!(s.count_every(con, a, b).unwrap(), every.len() as u64);
        for uid in [1u64, 3, 50] {
            let expected: Vec<NaiveDate> = model
                .range(a..=b)
                .filter(|(_, v)| v.contains(&uid))
                .map(|(d, _)| *d)
                .collect();
            assert_eq!(s.days_signed_in(con, uid, a, b).unwrap(), expected);
        }
    }
    for d in &days {
        assert_eq!(s.count(con, *d).unwrap(), model[d].len() as u64);
        for uid in [1u64, 3, 50, 9_000_000, 9_000_001] {
            assert_eq!(
                s.signed_in(con, uid, *d).unwrap(),
                model[d].contains(&uid),
                "{uid} {d}"
            );
        }
    }
    // uid 1 signed in every day: one streak over the whole span.
    let st = s.streak(con, 1, days[0], *days.last().unwrap()).unwrap();
    assert_eq!(st.longest as usize, days.len());
    assert_eq!(st.current as usize, days.len());
    assert_eq!(st.longest_ends, Some(*days.last().unwrap()));
}

#[test]
fn ranges_in_one_script_with_a_tagged_prefix() {
    let server = support::server();
    let mut con = server.connection();
    let s = SignIn::new("signin:{app}")
        .unwrap()
        .topology(Topology::Cluster);
    model_check(&mut con, &s);
    // The range scripts (signin.combine, signin.count) leave no temporary key.
    let tmp: Vec<String> = redis::cmd("KEYS").arg("*:tmp:*").query(&mut con).unwrap();
    assert_eq!(tmp, Vec::<String>::new());
}

#[test]
fn ranges_client_side_on_a_cluster_without_tag() {
    let server = support::server();
    let mut con = server.connection();
    let s = SignIn::new("signin").unwrap().topology(Topology::Cluster);
    model_check(&mut con, &s);
    let standalone = SignIn::new("signin").unwrap();
    let (a, b) = (day(2023, 12, 30), day(2024, 1, 2));
    assert_eq!(
        standalone.active_every(&mut con, a, b).unwrap(),
        s.active_every(&mut con, a, b).unwrap()
    );
    // The count in the script (standalone) agrees with the client-side count.
    for (a, b) in [(a, b), (day(2023, 12, 28), day(2024, 3, 2))] {
        assert_eq!(
            standalone.count_any(&mut con, a, b).unwrap(),
            s.count_any(&mut con, a, b).unwrap()
        );
        assert_eq!(
            standalone.count_every(&mut con, a, b).unwrap(),
            s.count_every(&mut con, a, b).unwrap()
        );
    }
}

#[test]
fn streaks() {
    let server = support::server();
    let mut con = server.connection();
    let s = SignIn::new("st").unwrap();
    let start = day(2024, 2, 26);
    // Runs: Feb 26-27 (2), Feb 29..Mar 4 (5, across the leap day), Mar 6 (1).
    let offsets = [0, 1, 3, 4, 5, 6, 7, 9];
    for o in offsets {
        s.sign_in(&mut con, 77, start + chrono::Days::new(o))
            .unwrap();
    }
    let st = s.streak(&mut con, 77, start, day(2024, 3, 6)).unwrap();
    assert_eq!(st.longest, 5);
    assert_eq!(st.longest_ends, Some(day(2024, 3, 4)));
    assert_eq!(st.current, 1);
    let st = s.streak(&mut con, 77, start, day(2024, 3, 5)).unwrap();
    assert_eq!((st.longest, st.current), (5, 0));
    let st = s
        .streak(&mut con, 77, day(2024, 3, 1), day(2024, 3, 4))
        .unwrap();
    assert_eq!((st.longest, st.current), (4, 4));
    let none = s.streak(&mut con, 78, start, day(2024, 3, 6)).unwrap();
    assert_eq!(
        (none.longest, none.longest_ends, none.current),
        (0, None, 0)
    );
}

#[test]
fn retention_is_optional() {
    let server = support::server();
    let mut con = server.connection();
    let s = SignIn::new("r").unwrap().retention_days(30);
    s.sign_in(&mut con, 5, day(2099, 2, 28)).unwrap();
    let at: i64 = redis::cmd("EXPIRETIME")
        .arg(s.key(day(2099, 2, 28)))
        .query(&mut con)
        .unwrap();
    let end = day(2099, 3, 1)
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
        .timestamp();
    assert_eq!(at, end + 30 * 86_400);
}

#[test]
fn retention_refuses_an_expiry_at_the_epoch() {
    // retention 0 on 1969-12-31: the day ends at 1970-01-01 00:00 UTC, an
    // EXPIREAT of 0, which the script reads as "no TTL".
    let server = support::server();
    let mut con = server.connection();
    let s = SignIn::new("e").unwrap().retention_days(0);
    assert!(matches!(
        s.sign_in(&mut con, 5, day(1969, 12, 31))
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert_eq!(support::dbsize(&mut con), 0);
}

#[test]
fn bad_input_writes_nothing() {
    let server = support::server();
    let mut con = server.connection();
    let s = SignIn::new("b").unwrap().max_uid(1_000_000).unwrap();
    match s
        .sign_in(&mut con, 4_000_000_000, day(2024, 1, 1))
        .map_err(Error::into_kind)
    {
        Err(ErrorKind::UidOutOfRange { detail }) => assert!(detail.contains("4000000000")),
        other => panic!("expected UidOutOfRange, got {other:?}"),
    }
    assert!(matches!(
        s.sign_in(&mut con, 1_000_001, day(2024, 1, 1))
            .map_err(Error::into_kind),
        Err(ErrorKind::UidOutOfRange { .. })
    ));
    assert!(s.sign_in(&mut con, 1_000_000, day(2024, 1, 1)).is_ok());
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    for p in ["", "a b", "a{b", "a{}b", "{a}{b}", "a}b{"] {
        assert!(SignIn::new(p).is_err(), "{p:?}");
    }
    assert!(SignIn::new("x").unwrap().max_uid(1 << 32).is_err());
    let (a, b) = (day(2024, 1, 2), day(2024, 1, 1));
    assert!(matches!(
        s.active_any(&mut con, a, b).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        s.active_every(&mut con, a, b).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        s.streak(&mut con, 1, a, b).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    // Straight to the script (another language): the offset trap holds.
    let reply = redis_patterns::scripts::signin::mark("b:20240101", 4_000_000_000, 10_000_000, 0)
        .unwrap()
        .invoke(&mut con);
    assert!(
        matches!(
            reply.as_ref().map_err(Error::kind),
            Err(ErrorKind::UidOutOfRange { .. })
        ),
        "{reply:?}"
    );
    assert!(redis_patterns::scripts::signin::combine("b:tmp", &["b:20240101"], "XOR").is_err());
    let reply = support::raw_call::<redis::Value>(
        &redis_patterns::scripts::SIGNIN_COMBINE,
        &["b:tmp", "b:20240101"],
        &["XOR"],
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
    assert!(redis_patterns::scripts::signin::count("b:tmp", &["b:20240101"], "XOR").is_err());
    let reply = support::raw_call::<redis::Value>(
        &redis_patterns::scripts::SIGNIN_COUNT,
        &["b:tmp", "b:20240101"],
        &["XOR"],
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
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let cluster = support::cluster();
    let mut con = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    let topology = Topology::detect(&mut con).unwrap();
    assert_eq!(topology, Topology::Cluster);
    // Days spread over the slots (ranges combined client-side), days sharing
    // one tag (ranges in one script), and with retention.
    let spread = SignIn::new("signin")
        .unwrap()
        .retention_days(40_000)
        .topology(topology);
    let tagged = SignIn::new("signin:{app}").unwrap().topology(topology);
    let slots: BTreeSet<u16> = day(2024, 1, 1)
        .iter_days()
        .take(10)
        .map(|d| redis_patterns::keys::cluster_slot(spread.key(d).as_bytes()))
        .collect();
    assert!(slots.len() > 1, "the days of a range span slots");
    // Refusals are typed on a cluster too, and write nothing.
    assert!(matches!(
        spread
            .sign_in(&mut con, 10_000_001, day(2024, 1, 1))
            .map_err(Error::into_kind),
        Err(ErrorKind::UidOutOfRange { .. })
    ));
    assert!(matches!(
        spread
            .days_signed_in(&mut con, 1, day(2024, 1, 2), day(2024, 1, 1))
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    for node in cluster.nodes() {
        assert_eq!(support::dbsize(&mut node.connection()), 0);
    }
    model_check(&mut con, &spread);
    model_check(&mut con, &tagged);

    // The same keys, bitmaps and expiry times as on one server.
    let server = support::server();
    let mut single = server.connection();
    model_check(
        &mut single,
        &SignIn::new("signin").unwrap().retention_days(40_000),
    );
    model_check(&mut single, &SignIn::new("signin:{app}").unwrap());
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
        support::all_keys(&mut single),
        "no temporary key left"
    );
    for key in &on_nodes {
        let dump = |c: &mut dyn redis::ConnectionLike| -> (Vec<u8>, i64) {
            let v: Vec<u8> = redis::cmd("GET").arg(key).query(c).unwrap();
            let at: i64 = redis::cmd("EXPIRETIME").arg(key).query(c).unwrap();
            (v, at)
        };
        assert_eq!(dump(&mut single), dump(&mut con), "{key}");
    }
}
