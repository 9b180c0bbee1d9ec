//! A request that reached the server but whose reply was lost (a loopback
//! proxy cuts the connection right after the server answered): an
//! idempotent call is sent again on a new connection and returns its
//! result; a call that is not idempotent fails with
//! `ErrorKind::OutcomeUnknown` naming it, ran exactly once, and is never
//! sent again. Through every kind of connection of the crate. An
//! idempotent call whose answer a resend can turn false (a release that
//! finds nothing to release, a visit already counted) answers "not known"
//! after such a resend.

#[path = "support/kinds.rs"]
mod kinds;
#[path = "support/proxy.rs"]
mod proxy;
mod support;

use std::time::Duration;

use chrono::NaiveDate;
use redis_patterns::bloom::{Bloom, Engine, JsHashBloom};
use redis_patterns::core::{RequestId, RetryPolicy};
use redis_patterns::lock::Lock;
use redis_patterns::login_log::LoginLog;
use redis_patterns::rate_limit::{Limit, RateLimiter};
use redis_patterns::rolling::RollingStore;
use redis_patterns::rwlock::RwLock;
use redis_patterns::semaphore::Semaphore;
use redis_patterns::sharded_hash::ShardedHash;
use redis_patterns::signin::SignIn;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{Batch, ErrorKind, Op, Request, scripts};
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

/// Every script cached (or the library loaded), so that a reply cut is the
/// call's own.
fn load_scripts(server: &redis_patterns_test_support::LocalServer) {
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
}

/// A fresh server with every script loaded ([`load_scripts`]), and a
/// proxy in front of it that can cut a reply.
fn proxied() -> (redis_patterns_test_support::LocalServer, proxy::Proxy) {
    let server = support::server();
    let proxy = proxy::Proxy::start(server.port());
    load_scripts(&server);
    (server, proxy)
}

/// Makes `d` connect (and its handshake get answered) with a `PING`, so
/// that a cut armed next falls on the call that follows.
fn connected(d: &mut Driver) {
    let mut ping = Batch::new();
    ping.add_keyless(redis::cmd("PING"));
    d.run(ping).unwrap();
}

/// Runs `req` through `d` with the next reply cut: the request ran, its
/// reply is lost, and the crate sends it again (one cut).
fn resent<R: Request>(proxy: &proxy::Proxy, d: &mut Driver, req: R) -> R::Output {
    connected(d);
    let before = proxy.cuts();
    proxy.cut_next_reply();
    let out = d.run(req).expect("an idempotent call is resent");
    assert_eq!(proxy.cuts(), before + 1, "one reply was cut");
    out
}

/// Each idempotent call whose answer says what it changed, its reply cut
/// after the first attempt ran: the resend finds the change made and the
/// answer is "not known", never a `false` (or a count) that would be wrong.
/// Unchanged by a resend, and checked here too: an acquire answers the
/// same fence, an extend still holds the lease.
#[test]
fn a_resend_that_found_its_work_done_answers_not_known() {
    let (_server, proxy) = proxied();
    let day = NaiveDate::from_ymd_opt(2100, 1, 1).unwrap();
    for (n, (kind, mut d)) in kinds::KINDS
        .iter()
        .zip(kinds::every_kind(&proxy.url()))
        .enumerate()
    {
        let name = |what: &str| format!("{what}{n}");
        let lock = Lock::new(&name("l"), Duration::from_secs(30)).unwrap();
        let lease = d.run(lock.try_acquire()).unwrap();
        let again = resent(&proxy, &mut d, lock.try_acquire_as(&lease.token));
        assert_eq!(again.fence, lease.fence, "{kind}: an acquire's resend");
        assert!(resent(
            &proxy,
            &mut d,
            lock.extend(&lease.token, Duration::from_secs(30))
        ));
        assert_eq!(
            resent(&proxy, &mut d, lock.release(&lease.token)),
            None,
            "{kind}: lock release"
        );
        assert_eq!(
            d.run(lock.release(&lease.token)).unwrap(),
            Some(false),
            "{kind}"
        );

        let sem = Semaphore::new(&name("s"), 2, Duration::from_secs(30)).unwrap();
        let permit = d.run(sem.try_acquire()).unwrap();
        assert_eq!(
            resent(&proxy, &mut d, sem.release(&permit.token)),
            None,
            "{kind}: permit"
        );
        let rw = RwLock::new(&name("rw"), Duration::from_secs(30)).unwrap();
        let read = d.run(rw.try_read()).unwrap();
        assert_eq!(
            resent(&proxy, &mut d, rw.release(&read)),
            None,
            "{kind}: read lease"
        );
        let write = d.run(rw.try_write()).unwrap();
        assert_eq!(
            resent(&proxy, &mut d, rw.release(&write)),
            None,
            "{kind}: write lease"
        );

        let visits = VisitCounter::new(&name("v"), chrono::Utc, 4).unwrap();
        let v = resent(&proxy, &mut d, visits.add(day, 7));
        assert_eq!((v.new, v.count), (None, 1), "{kind}: visit");
        let b = resent(&proxy, &mut d, visits.add_batch(day, &[8, 9, 8]));
        assert_eq!(
            (b.new, b.count),
            (vec![None, None, Some(false)], 3),
            "{kind}: batch"
        );
        let p = resent(&proxy, &mut d, visits.add_pipelined(day, &[10]));
        assert_eq!(p[0].new, None, "{kind}: pipelined visit");

        for engine in [Engine::Script, Engine::Bitfield] {
            let bf = d
                .run(
                    Bloom::builder(&name(&format!("bf{engine:?}")))
                        .expected(1000)
                        .fp_rate(0.01)
                        .engine(engine)
                        .create(),
                )
                .unwrap();
            assert_eq!(
                resent(&proxy, &mut d, bf.add("a")),
                None,
                "{kind}: {engine:?} add"
            );
            let flags = resent(&proxy, &mut d, bf.multi_add(&["b", "c"]));
            assert_eq!(flags, [None, None], "{kind}: {engine:?} multi_add");
            assert_eq!(
                d.run(bf.add("a")).unwrap(),
                Some(false),
                "{kind}: known again"
            );
        }
        let php = JsHashBloom::new(&name("js")).unwrap();
        assert_eq!(
            resent(&proxy, &mut d, php.add("a@x")),
            None,
            "{kind}: jshash"
        );

        let signin = SignIn::builder().tag(&name("si")).build().unwrap();
        assert_eq!(
            resent(&proxy, &mut d, signin.sign_in(5, day)),
            None,
            "{kind}: sign_in"
        );
        let log = LoginLog::builder()
            .prefix(redis_patterns::keys::Prefix::new(&name("ll:")).unwrap())
            .build()
            .unwrap();
        assert_eq!(
            resent(&proxy, &mut d, log.record("client", 5, day)),
            None,
            "{kind}: login"
        );

        let limiter = RateLimiter::new(Limit::gcra(10, 10, Duration::from_secs(1))).unwrap();
        let subject = name("u");
        d.run(limiter.throttle(&subject, 1)).unwrap();
        assert_eq!(
            resent(&proxy, &mut d, limiter.reset(&subject)),
            None,
            "{kind}: reset"
        );

        let h = ShardedHash::new(&name("h"), 4).unwrap();
        assert_eq!(resent(&proxy, &mut d, h.set("f", "1")), None, "{kind}: set");
        assert_eq!(
            resent(&proxy, &mut d, h.set_if_absent("g", "1")),
            None,
            "{kind}: setnx"
        );
        assert_eq!(
            resent(&proxy, &mut d, h.delete("f")),
            None,
            "{kind}: delete"
        );
        let pairs = [("x", "1"), ("y", "2")];
        assert_eq!(
            resent(&proxy, &mut d, h.set_many(&pairs)),
            None,
            "{kind}: set_many"
        );
        // A resend that found nothing left to find says what it knows.
        assert_eq!(
            resent(&proxy, &mut d, h.set_many(&[("z", "3")])),
            None,
            "{kind}"
        );
        assert_eq!(
            d.run(h.set("f", "2")).unwrap(),
            Some(true),
            "{kind}: known again"
        );

        let store = RollingStore::new(10, 5, Duration::from_secs(600)).unwrap();
        let key = name("r");
        let added = resent(&proxy, &mut d, store.add(&key, "tx1", &1));
        assert_eq!(
            (added.replaced, added.evicted),
            (None, None),
            "{kind}: rolling add"
        );
        assert_eq!(
            resent(&proxy, &mut d, store.clear(&key)),
            None,
            "{kind}: rolling clear"
        );
    }
}

#[test]
fn a_lost_reply_is_resent_only_for_idempotent_calls() {
    let (server, proxy) = proxied();
    let day = NaiveDate::from_ymd_opt(2100, 1, 1).unwrap();
    for (kind, mut d) in kinds::KINDS.iter().zip(kinds::every_kind(&proxy.url())) {
        let h = ShardedHash::new(&format!("h{}", kind.len()), 8).unwrap();
        let cut = |d: &mut Driver, f: &mut dyn FnMut(&mut Driver)| {
            connected(d);
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
