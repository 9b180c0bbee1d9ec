//! Every error a failover can produce, injected by a loopback proxy in
//! front of a real server (it answers the chosen command with the server's
//! error in its place in the pipeline instead of running it), through every
//! kind of connection of the crate, and each mapped to what it means:
//!
//! * **retryable** — `LOADING`, `BUSY`, `TRYAGAIN`, `CLUSTERDOWN`,
//!   `MASTERDOWN`, `NOREPLICAS`: the command did not run; the connection
//!   sends it again after a backoff (idempotent or not) and it runs once;
//!   a server that keeps refusing gets its typed, retryable error back
//!   when the retry policy is used up, with nothing run;
//! * **redirect** — `READONLY` and a demotion (`UNBLOCKED … (master ->
//!   replica?)`, `ERR WAIT cannot be used with replica instances`): on a
//!   cluster the slot map is read again and the command goes to the new
//!   primary (the failover suite, `tests/failover.rs`, meets them for
//!   real); one server that answers them is a replica, and the typed,
//!   retryable error comes back at once, with nothing run;
//! * **outcome unknown** — a durability `WAIT` (or a lock's acknowledged
//!   acquire) answered by a demoted primary after the write ran there: an
//!   idempotent call goes again and returns its result, any other fails
//!   with `ErrorKind::OutcomeUnknown` naming it, having run exactly once.
//!
//! (`MOVED` / `ASK` are followed on a cluster: `tests/resharding.rs`.)

#[path = "support/kinds.rs"]
mod kinds;
#[path = "support/proxy.rs"]
mod proxy;
mod support;

use std::time::Duration;

use chrono::NaiveDate;
use redis_patterns::core::{Durability, RetryPolicy};
use redis_patterns::lock::{Lock, Replication};
use redis_patterns::sharded_hash::ShardedHash;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{Batch, ErrorKind, Op, ServerErrorKind};
use redis_patterns_test_support::LocalServer;
use support::Driver;

/// The errors that prove a command did not run and that waiting may cure,
/// as a server sends them, with their kind.
const LATER: [(&str, ServerErrorKind); 6] = [
    (
        "LOADING Redis is loading the dataset in memory",
        ServerErrorKind::Loading,
    ),
    (
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        ServerErrorKind::Busy,
    ),
    (
        "TRYAGAIN Multiple keys request during rehashing of slot",
        ServerErrorKind::TryAgain,
    ),
    (
        "CLUSTERDOWN The cluster is down",
        ServerErrorKind::ClusterDown,
    ),
    (
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        ServerErrorKind::MasterDown,
    ),
    (
        "NOREPLICAS Not enough good replicas to write.",
        ServerErrorKind::NoReplicas,
    ),
];

const UNBLOCKED: &str =
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";
const WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.";

/// The answers of a node that stopped being a primary.
const DEMOTED: [(&str, ServerErrorKind); 3] = [
    (
        "READONLY You can't write against a read only replica.",
        ServerErrorKind::ReadOnly,
    ),
    (UNBLOCKED, ServerErrorKind::Demoted),
    (WAIT_ON_REPLICA, ServerErrorKind::Demoted),
];

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2100, 1, 1).unwrap()
}

fn incr(key: &str) -> Op<i64> {
    Op::cmd(key, redis::cmd("INCR").arg(key).clone())
}

/// An integer at `key` (0 when absent), read on a connection of its own.
fn int_at(server: &LocalServer, key: &str) -> i64 {
    redis::cmd("GET")
        .arg(key)
        .query::<Option<i64>>(&mut server.connection())
        .unwrap()
        .unwrap_or(0)
}

/// A field of the hash's shard, read on a connection of its own.
fn field(server: &LocalServer, h: &ShardedHash, f: &str) -> i64 {
    redis::cmd("HGET")
        .arg(h.shard_key(f.as_bytes()).unwrap())
        .arg(f)
        .query::<Option<i64>>(&mut server.connection())
        .unwrap()
        .unwrap_or(0)
}

/// Connected, its handshake answered and every script cached, before a
/// refusal is armed.
fn ready(d: &mut Driver, h: &ShardedHash) {
    let mut ping = Batch::new();
    ping.add_keyless(redis::cmd("PING"));
    d.run(ping).unwrap();
    d.run(h.incr("warm", 1)).unwrap();
}

fn set_policy(d: &mut Driver, policy: RetryPolicy) {
    match d {
        Driver::Sync(con) => con.set_retry_policy(policy),
        Driver::Async(con, _) => con.set_retry_policy(policy),
    }
}

fn set_durability(d: &mut Driver, durability: Durability) {
    match d {
        Driver::Sync(con) => con.set_durability(durability).unwrap(),
        Driver::Async(con, _) => con.set_durability(durability).unwrap(),
    }
}

/// Code by code: refused once, a script call that is not idempotent and a
/// plain `INCR` run once after a backoff; refused every time, they fail
/// with the typed, retryable error after the policy's attempts, not run.
#[test]
fn a_refusal_that_proves_nothing_ran_is_sent_again_and_typed_when_it_persists() {
    let server = support::server();
    let proxy = proxy::Proxy::start(server.port());
    let few = RetryPolicy::builder()
        .attempts(3)
        .base_delay(Duration::from_millis(5))
        .max_delay(Duration::from_millis(20))
        .build()
        .unwrap();
    for (kind, mut d) in kinds::KINDS.iter().zip(kinds::every_kind(&proxy.url())) {
        let h = ShardedHash::new(&format!("h{}", kind.len()), 4).unwrap();
        let k = format!("n{}", kind.len());
        ready(&mut d, &h);
        for (error, typed) in LATER {
            let code = error.split(' ').next().unwrap();
            let (before, plain) = (field(&server, &h, "n"), int_at(&server, &k));
            proxy.refuse(proxy::script_call, error, 1);
            d.run(h.incr("n", 1))
                .unwrap_or_else(|e| panic!("{kind}: incr after one {code}: {e}"));
            assert_eq!(proxy.refused(), 1, "{kind} {code}");
            assert_eq!(
                field(&server, &h, "n"),
                before + 1,
                "{kind} {code}: ran once"
            );
            proxy.refuse(|c| proxy::named(c, "INCR"), error, 1);
            d.run(incr(&k))
                .unwrap_or_else(|e| panic!("{kind}: INCR after one {code}: {e}"));
            assert_eq!(
                int_at(&server, &k),
                plain + 1,
                "{kind} {code}: INCR ran once"
            );

            set_policy(&mut d, few);
            proxy.refuse(proxy::script_call, error, usize::MAX);
            let e = d.run(h.incr("n", 1)).unwrap_err();
            assert_eq!(proxy.refused(), 3, "{kind} {code}: every attempt refused");
            proxy.refuse(|c| proxy::named(c, "INCR"), error, usize::MAX);
            let plain_e = d.run(incr(&k)).unwrap_err();
            proxy.refuse(|_| false, "", 0);
            set_policy(&mut d, RetryPolicy::default());
            for e in [&e, &plain_e] {
                assert!(
                    e.is_retryable() && e.to_string().contains(code),
                    "{kind} {code}: {e}"
                );
                assert_eq!(e.server_kind(), Some(typed), "{kind}: {e}");
            }
            assert_eq!(e.script(), Some("sharded_hash.incr"), "{kind}: {e}");
            assert_eq!(
                field(&server, &h, "n"),
                before + 1,
                "{kind} {code}: not run"
            );
            assert_eq!(int_at(&server, &k), plain + 1, "{kind} {code}: not run");
        }
    }
}

/// One server that answers as a replica (`READONLY`, a demotion) is not
/// waited for: the typed, retryable error comes back at the first
/// refusal, nothing ran, and the next call goes through.
#[test]
fn a_server_that_answers_as_a_replica_is_reported_at_once() {
    let server = support::server();
    let proxy = proxy::Proxy::start(server.port());
    for (kind, mut d) in kinds::KINDS.iter().zip(kinds::every_kind(&proxy.url())) {
        let h = ShardedHash::new(&format!("r{}", kind.len()), 4).unwrap();
        let k = format!("r{}", kind.len());
        ready(&mut d, &h);
        for (error, typed) in DEMOTED {
            let code: String = error.chars().take(24).collect();
            let before = field(&server, &h, "n");
            proxy.refuse(proxy::script_call, error, usize::MAX);
            let e = d.run(h.incr("n", 1)).unwrap_err();
            assert_eq!(proxy.refused(), 1, "{kind} {code}: not sent again");
            proxy.refuse(|c| proxy::named(c, "INCR"), error, usize::MAX);
            let plain_e = d.run(incr(&k)).unwrap_err();
            assert_eq!(proxy.refused(), 1, "{kind} {code}: not sent again");
            proxy.refuse(|_| false, "", 0);
            for e in [&e, &plain_e] {
                assert_eq!(e.server_kind(), Some(typed), "{kind}: {e}");
                assert!(e.is_retryable(), "{kind}: {e}");
            }
            assert_eq!(field(&server, &h, "n"), before, "{kind} {code}: not run");
            assert_eq!(int_at(&server, &k), 0, "{kind} {code}: not run");
            d.run(h.incr("n", 1)).unwrap();
            assert_eq!(field(&server, &h, "n"), before + 1, "{kind}: runs again");
            d.run(Op::<()>::cmd(&k, redis::cmd("DEL").arg(&k).clone()))
                .unwrap();
        }
    }
}

/// A primary and its replica, the proxy in front of the primary.
fn primary_with_replica() -> (LocalServer, LocalServer) {
    let primary = support::server_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = support::linked_replica(&primary);
    (primary, replica)
}

/// The `WAIT` after a durable write answered by a primary that a failover
/// demoted (both wordings): the write ran there and may be discarded. An
/// idempotent call (a visit, a plain `SET`, an acknowledged lock acquire)
/// goes again and returns its result; a call that is not (a script's
/// increment, a plain `INCR`) fails with `OutcomeUnknown` naming it and the
/// replaced primary, having run exactly once.
#[test]
fn a_write_whose_wait_meets_a_demoted_primary_is_resent_or_unknown() {
    let (primary, _replica) = primary_with_replica();
    let proxy = proxy::Proxy::start(primary.port());
    let durable = Durability::replicas(1, Duration::from_secs(2)).unwrap();
    let wait = |c: &[Vec<u8>]| proxy::named(c, "WAIT");
    for (n, (kind, mut d)) in kinds::KINDS
        .iter()
        .zip(kinds::every_kind(&proxy.url()))
        .enumerate()
    {
        let h = ShardedHash::new(&format!("d{n}"), 4).unwrap();
        let visits = VisitCounter::new(&format!("v{n}"), chrono::Utc, 4).unwrap();
        ready(&mut d, &h);
        d.run(visits.add(day(), 1)).unwrap();
        set_durability(&mut d, durable);
        for (m, error) in [UNBLOCKED, WAIT_ON_REPLICA].into_iter().enumerate() {
            let code: String = error.chars().take(24).collect();
            let before = field(&primary, &h, "n");
            proxy.refuse(wait, error, 1);
            let e = d.run(h.incr("n", 1)).unwrap_err();
            assert_eq!(proxy.refused(), 1, "{kind} {code}");
            match e.kind() {
                ErrorKind::OutcomeUnknown {
                    scripts,
                    commands,
                    cause,
                } => {
                    assert_eq!(scripts, &["sharded_hash.incr"], "{kind}");
                    assert!(commands.is_empty(), "{kind}");
                    assert!(cause.contains("replaced primary"), "{kind}: {cause}");
                }
                other => panic!("{kind} {code}: expected OutcomeUnknown, got {other}"),
            }
            assert!(!e.is_retryable(), "{kind}: {e}");
            assert_eq!(field(&primary, &h, "n"), before + 1, "{kind}: ran once");

            let k = format!("plain{n}:{m}");
            proxy.refuse(wait, error, 1);
            let e = d.run(incr(&k)).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::OutcomeUnknown { scripts, commands, .. }
                    if scripts.is_empty() && commands == &["INCR"]),
                "{kind} {code}: {e}"
            );
            assert_eq!(int_at(&primary, &k), 1, "{kind}: INCR ran once");
            proxy.refuse(wait, error, 1);
            d.run(Op::<()>::cmd(&k, redis::cmd("SET").arg(&k).arg(7).clone()))
                .unwrap_or_else(|e| panic!("{kind} {code}: SET is resent: {e}"));
            assert_eq!(int_at(&primary, &k), 7, "{kind}");

            let member = 10 + m as i64;
            proxy.refuse(wait, error, 1);
            let v = d
                .run(visits.add(day(), member))
                .unwrap_or_else(|e| panic!("{kind} {code}: a visit is resent: {e}"));
            assert_eq!(proxy.refused(), 1, "{kind} {code}");
            assert_eq!(
                (v.new, v.count),
                (None, 2 + m as u64),
                "{kind} {code}: counted once, whether new not known"
            );

            let lock = Lock::builder(&format!("l{n}:{m}"))
                .lease(Duration::from_secs(30))
                .replication(Replication::Acknowledged {
                    replicas: 1,
                    timeout: Duration::from_secs(2),
                })
                .build()
                .unwrap();
            proxy.refuse(wait, error, 1);
            let lease = d
                .run(lock.try_acquire())
                .unwrap_or_else(|e| panic!("{kind} {code}: an acquire is resent: {e}"));
            assert_eq!(proxy.refused(), 1, "{kind} {code}");
            assert!(d.run(lock.owned(&lease.token)).unwrap().is_some(), "{kind}");
            let fence: Option<u64> = redis::cmd("GET")
                .arg(lock.fence_key())
                .query(&mut primary.connection())
                .unwrap();
            assert_eq!(fence, Some(lease.fence), "{kind}: one fence, the lease's");
        }
        assert_eq!(d.run(visits.count(day())).unwrap(), 3, "{kind}");
    }
}
