//! A request that reached the server but whose reply was lost (a loopback
//! proxy cuts the connection right after the server answered): an
//! idempotent call is sent again on a new connection and returns its
//! result; a call that is not idempotent fails with
//! `ErrorKind::OutcomeUnknown` naming it, ran exactly once, and is never
//! sent again. Through every kind of connection of the crate.

#[path = "support/kinds.rs"]
mod kinds;
#[path = "support/proxy.rs"]
mod proxy;
mod support;

use chrono::NaiveDate;
use redis_patterns::core::{RequestId, RetryPolicy};
use redis_patterns::sharded_hash::ShardedHash;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{Batch, ErrorKind, Op, scripts};
use support::Driver;

fn incr(key: &str) -> redis::Cmd {
    redis::cmd("INCR").arg(key).clone()
}

/// The value of `field` in the hash's shard, read on a connection of its own.
fn field(server: &redis_patterns_test_support::LocalServer, h: &ShardedHash, f: &str) -> i64 {
    let key = h.shard_key(f.as_bytes()).unwrap();
    redis::cmd("HGET")
        .arg(&key)
        .arg(f)
        .query::<Option<i64>>(&mut server.connection())
        .unwrap()
        .unwrap_or(0)
}

fn get(server: &redis_patterns_test_support::LocalServer, key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

fn set_policy(d: &mut Driver, policy: RetryPolicy) {
    match d {
        Driver::Sync(con) => con.set_retry_policy(policy),
        Driver::Async(con, _) => con.set_retry_policy(policy),
    }
}

#[test]
fn a_lost_reply_is_resent_only_for_idempotent_calls() {
    let server = support::server();
    let proxy = proxy::Proxy::start(server.port());
    // Every script cached (or the library loaded), so that the reply cut is
    // the call's own.
    let mut loader = redis_patterns::Connection::open(server.url()).unwrap();
    match support::call_mode() {
        redis_patterns::CallMode::Evalsha => {
            redis_patterns::Request::run(redis_patterns::load_all(), &mut loader).map(drop)
        }
        redis_patterns::CallMode::Functions => {
            redis_patterns::Request::run(redis_patterns::functions::load(), &mut loader).map(drop)
        }
    }
    .unwrap();
    let day = NaiveDate::from_ymd_opt(2100, 1, 1).unwrap();
    for (kind, mut d) in kinds::KINDS.iter().zip(kinds::every_kind(&proxy.url())) {
        let h = ShardedHash::new(&format!("h{}", kind.len()), 8).unwrap();
        let cut = |d: &mut Driver, f: &mut dyn FnMut(&mut Driver)| {
            // Connected (and its handshake answered) before the cut is armed.
            let mut ping = Batch::new();
            ping.add_keyless(redis::cmd("PING"));
            d.run(ping).unwrap();
            let before = proxy.cuts();
            proxy.cut_next_reply();
            f(d);
            assert_eq!(proxy.cuts(), before + 1, "{kind}: one reply was cut");
        };

        // Not idempotent: ran once, not resent, OutcomeUnknown names it.
        assert_eq!(d.run(h.incr("n", 1)).unwrap(), 1);
        cut(&mut d, &mut |d| {
            let e = d.run(h.incr("n", 1)).unwrap_err();
            match e.kind() {
                ErrorKind::OutcomeUnknown {
                    scripts, commands, ..
                } => {
                    assert_eq!(scripts, &["sharded_hash.incr"], "{kind}");
                    assert!(commands.is_empty());
                }
                other => panic!("{kind}: expected OutcomeUnknown, got {other}"),
            }
            assert!(!e.is_retryable());
            assert_eq!(e.script(), Some("sharded_hash.incr"));
            assert!(e.to_string().contains("sharded_hash.incr"), "{e}");
        });
        assert_eq!(field(&server, &h, "n"), 2, "{kind}: it ran exactly once");
        // The connection recovers by itself.
        assert_eq!(d.run(h.incr("n", 1)).unwrap(), 3, "{kind}");

        // With a request id it is idempotent: resent, answered once.
        let req = RequestId::random();
        cut(&mut d, &mut |d| {
            assert_eq!(d.run(h.incr_once("n", 10, &req)).unwrap(), 13, "{kind}");
        });
        assert_eq!(field(&server, &h, "n"), 13, "{kind}: applied once");

        // An idempotent script: resent; the second run found the first
        // one's member, so whether it was new is not known (not "false").
        let visits = VisitCounter::new(&format!("v{}", kind.len()), chrono::Utc, 4).unwrap();
        cut(&mut d, &mut |d| {
            let v = d.run(visits.add(day, 7)).unwrap();
            assert_eq!((v.new, v.count), (None, 1), "{kind}: the resend's reply");
        });
        assert_eq!(d.run(visits.count(day)).unwrap(), 1);

        // Plain commands: SET is resent, INCR is not.
        let k = format!("plain:{kind}");
        cut(&mut d, &mut |d| {
            let set = redis::cmd("SET").arg(&k).arg("5").clone();
            d.run(Op::<()>::cmd(&k, set)).unwrap();
        });
        cut(&mut d, &mut |d| {
            let e = d.run(Op::<i64>::cmd(&k, incr(&k))).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::OutcomeUnknown { scripts, commands, .. }
                    if scripts.is_empty() && commands == &["INCR"]),
                "{kind}: {e}"
            );
        });
        assert_eq!(get(&server, &k).as_deref(), Some("6"), "{kind}");

        // A batch with both: fails naming only what is not idempotent; the
        // idempotent calls are not sent again either.
        cut(&mut d, &mut |d| {
            let mut b = Batch::new();
            b.script(scripts::visits::add(
                &visits.counter_key(day),
                &visits.member_shard_key(day, 8),
                &visits.meta_key(day),
                0,
                0,
                8,
                i64::from(visits.shards()),
            ));
            b.add(&k, incr(&k));
            b.script(scripts::sharded_hash::incr(
                &h.shard_key(b"m").unwrap(),
                "{x}:req",
                b"m",
                1,
                0,
                0,
            ));
            let e = d.run(b).unwrap_err();
            match e.kind() {
                ErrorKind::OutcomeUnknown {
                    scripts, commands, ..
                } => {
                    assert_eq!(scripts, &["sharded_hash.incr"], "{kind}");
                    assert_eq!(commands, &["INCR"], "{kind}");
                }
                other => panic!("{kind}: {other}"),
            }
        });
        assert_eq!(get(&server, &k).as_deref(), Some("7"), "{kind}");

        // Without retries an idempotent call fails with the connection's error.
        set_policy(&mut d, RetryPolicy::none());
        cut(&mut d, &mut |d| {
            let e = d.run(visits.add(day, 9)).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Redis(_)) && e.is_retryable(),
                "{kind}: {e}"
            );
        });
        set_policy(&mut d, RetryPolicy::default());
        assert_eq!(d.run(visits.count(day)).unwrap(), 3, "{kind}");
    }
}
