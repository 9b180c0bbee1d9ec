//! `Durability::replicas` against real servers: a durable call whose script
//! the server's cache lacks (every freshly promoted replica, any server
//! after `SCRIPT FLUSH`) is loaded and sent again like any other, and the
//! durability verdict is given on the call that ran: `NotDurable` only for
//! writes that are on the primary.

mod support;

use std::time::Duration;

use chrono::NaiveDate;
use redis_patterns::core::Durability;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{CallMode, ErrorKind};
use redis_patterns_test_support::LocalServer;
use support::Driver;

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2100, 1, 1).unwrap()
}

fn set_durability(d: &mut Driver, durability: Durability) {
    match d {
        Driver::Sync(c) => c.set_durability(durability).unwrap(),
        Driver::Async(c, _) => c.set_durability(durability).unwrap(),
    }
}

/// Empties the server's script cache (and the Functions library).
fn flush(server: &LocalServer) {
    let mut con = server.connection();
    support::command_ok(&mut con, &["SCRIPT", "FLUSH"]);
    support::command_ok(&mut con, &["FUNCTION", "FLUSH"]);
}

/// A durable `visits.add` after the cache was emptied on `primary`: `Ok`
/// with `replicas` replicas, `NotDurable` without — and the member is
/// there either way.
fn durable_add_after_flush(primary: &LocalServer, replicas: u32) {
    let visits = VisitCounter::new("d", chrono::Utc, 4).unwrap();
    let durability = Durability::replicas(1, Duration::from_millis(200)).unwrap();
    for (n, mut d) in support::drivers(&primary.url()).into_iter().enumerate() {
        set_durability(&mut d, durability);
        let member = 10 + n as i64;
        flush(primary);
        let added = d.run(visits.add(day(), member));
        match (&added, replicas) {
            (Ok(v), 1) => assert_eq!(v.new, Some(true), "{}", d.name()),
            (Err(e), 0) => assert!(
                matches!(
                    e.kind(),
                    ErrorKind::NotDurable {
                        acknowledged: 0,
                        wanted: 1,
                        ..
                    }
                ),
                "{}: {e}",
                d.name()
            ),
            (other, _) => panic!("{} with {replicas} replica(s): {other:?}", d.name()),
        }
        assert!(
            d.run(visits.contains(day(), member)).unwrap(),
            "{}: the durable call ran (it was reloaded and sent again)",
            d.name()
        );
        let loaded: Vec<i64> = match d.call_mode() {
            CallMode::Evalsha => redis::cmd("SCRIPT")
                .arg("EXISTS")
                .arg(redis_patterns::scripts::VISITS_ADD.sha1)
                .query(&mut primary.connection())
                .unwrap(),
            CallMode::Functions => vec![1],
        };
        assert_eq!(loaded, [1], "the script was loaded again");
    }
}

#[test]
fn a_durable_call_after_a_script_flush_runs_and_only_then_is_judged() {
    let alone = support::server();
    durable_add_after_flush(&alone, 0);

    let primary = support::server();
    let _replica = support::linked_replica(&primary);
    durable_add_after_flush(&primary, 1);
}
