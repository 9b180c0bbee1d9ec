//! The owner-token lock against a real redis-server, every test body through
//! both drivers (sync `Connection`, async `AsyncConnection`).

mod support;

use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::lock::{DEFAULT_PREFIX, Lock, MAX_LEASE_MS};
use redis_patterns::{ErrorKind, keys::Prefix};
use support::Driver;

fn get(d: &mut Driver, key: &str) -> Option<String> {
    d.cmd(key, redis::cmd("GET").arg(key))
}

fn pttl(d: &mut Driver, key: &str) -> i64 {
    d.cmd(key, redis::cmd("PTTL").arg(key))
}

#[test]
fn mutual_exclusion_keeps_a_racy_counter_exact() {
    let server = support::server();
    let url = server.url();
    support::each_driver(&server, |d| {
        let lock = Lock::builder("counter")
            .lease(Duration::from_secs(10))
            .retry_interval(Duration::from_millis(2))
            .build()
            .expect("valid lock");
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let lock = lock.clone();
                let mut d = d.another(&url);
                thread::spawn(move || {
                    let mut fences = Vec::with_capacity(500);
                    for _ in 0..500 {
                        let lease = d
                            .run(lock.acquire(Duration::from_secs(60)))
                            .expect("acquire");
                        fences.push(lease.fence);
                        // A deliberately non-atomic read-modify-write.
                        let v: Option<i64> = d.cmd("counter", redis::cmd("GET").arg("counter"));
                        let _: () = d.cmd(
                            "counter",
                            redis::cmd("SET").arg("counter").arg(v.unwrap_or(0) + 1),
                        );
                        assert!(
                            d.run(lock.release(&lease.token)).expect("release"),
                            "still the owner"
                        );
                    }
                    fences
                })
            })
            .collect();
        let mut fences: Vec<u64> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect();
        assert_eq!(get(d, "counter").as_deref(), Some("4000"), "{}", d.name());
        fences.sort_unstable();
        fences.dedup();
        assert_eq!(
            fences.len(),
            4000,
            "every acquire got its own fencing token"
        );
        assert_eq!((fences[0], fences[3999]), (1, 4000));
        assert_eq!(get(d, lock.key()), None, "released at the end");
    });
}

#[test]
fn only_the_owner_can_release_or_extend() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let lock = Lock::new("job", Duration::from_secs(30)).expect("valid");
        let lease = d.run(lock.try_acquire()).expect("free lock");
        assert_eq!(lease.token.len(), 32);
        assert!(lease.token.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!d.run(lock.release("intruder")).expect("release"));
        assert!(
            !d.run(lock.extend("intruder", Duration::from_secs(300)))
                .expect("extend")
        );
        assert_eq!(get(d, lock.key()), Some(lease.token.clone()), "lock intact");
        let ttl = pttl(d, lock.key());
        assert!(
            ttl <= 30_000 && ttl > 0,
            "lease not extended by the intruder: {ttl}"
        );
        assert!(d.run(lock.owned("intruder")).expect("owned").is_none());

        assert!(
            d.run(lock.extend(&lease.token, Duration::from_secs(300)))
                .expect("extend")
        );
        let ttl = pttl(d, lock.key());
        assert!(ttl > 30_000, "owner extended the lease: {ttl}");
        let left = d
            .run(lock.owned(&lease.token))
            .expect("owned")
            .expect("owner");
        assert!(left > Duration::from_secs(30));
        assert!(d.run(lock.release(&lease.token)).expect("release"));
        assert!(
            !d.run(lock.release(&lease.token)).expect("second release"),
            "nothing left to release"
        );
    });
}

#[test]
fn try_acquire_on_a_held_lock_is_busy_with_the_remaining_lease() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let lock = Lock::new("busy", Duration::from_secs(20)).expect("valid");
        let _held = d.run(lock.try_acquire()).expect("free");
        let err = d.run(lock.try_acquire()).expect_err("held");
        assert!(err.is_busy());
        match err.into_kind() {
            ErrorKind::LockBusy {
                key,
                retry_after_ms: Some(ms),
            } => {
                assert_eq!(key, lock.key());
                assert!(ms > 0 && ms <= 20_000, "{ms}");
            }
            other => panic!("expected LockBusy, got {other:?}"),
        }
    });
}

#[test]
fn an_expired_lease_goes_to_the_next_owner_and_the_old_one_cannot_touch_it() {
    let server = support::server();
    support::each_driver(&server, |d| {
        // A short first lease; the next owner takes a long one, so that a
        // slow machine cannot let it run out before the checks below.
        let short = Lock::new("lease", Duration::from_millis(50)).expect("valid");
        let lock = Lock::new("lease", Duration::from_secs(30)).expect("valid");
        let first = d.run(short.try_acquire()).expect("free");
        thread::sleep(Duration::from_millis(80));
        let second = d.run(lock.try_acquire()).expect("expired lease is free");
        assert!(second.fence > first.fence);
        assert!(!d.run(lock.release(&first.token)).expect("late release"));
        assert!(
            !d.run(lock.extend(&first.token, Duration::from_secs(5)))
                .expect("late extend")
        );
        assert_eq!(
            get(d, lock.key()),
            Some(second.token.clone()),
            "the new owner keeps it"
        );
    });
}

#[test]
fn fencing_tokens_strictly_increase_across_owners_and_lock_objects() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let mut last = 0;
        for i in 0..20 {
            // A fresh Lock value each time: the counter is server-side.
            let lock = Lock::new("fenced", Duration::from_secs(5)).expect("valid");
            let lease = d.run(lock.try_acquire()).expect("free");
            assert!(
                lease.fence > last,
                "round {i}: {} after {last}",
                lease.fence
            );
            last = lease.fence;
            if i % 2 == 0 {
                assert!(d.run(lock.release(&lease.token)).expect("release"));
            } else {
                let _: () = d.cmd(lock.key(), redis::cmd("DEL").arg(lock.key())); // as if the lease expired
            }
        }
    });
}

#[test]
fn blocking_acquire_waits_for_a_release_and_times_out_with_a_typed_error() {
    let server = support::server();
    let url = server.url();
    support::each_driver(&server, |d| {
        let lock = Lock::new("wait", Duration::from_secs(30)).expect("valid");
        let held = d.run(lock.try_acquire()).expect("free");
        let started = Instant::now();
        match d
            .run(lock.acquire(Duration::from_millis(200)))
            .map_err(|e| e.into_kind())
        {
            Err(ErrorKind::LockTimeout { key, waited_ms }) => {
                assert_eq!(key, lock.key());
                assert!(waited_ms >= 200, "{waited_ms}");
            }
            other => panic!("expected LockTimeout, got {other:?}"),
        }
        assert!(started.elapsed() >= Duration::from_millis(200));
        // Zero timeout: exactly one attempt.
        assert!(matches!(
            d.run(lock.acquire(Duration::ZERO))
                .map_err(|e| e.into_kind()),
            Err(ErrorKind::LockTimeout { .. })
        ));

        let releaser = {
            let lock = lock.clone();
            let token = held.token.clone();
            let mut other = d.another(&url);
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(100));
                other.run(lock.release(&token)).expect("release")
            })
        };
        let next = d
            .run(lock.acquire(Duration::from_secs(10)))
            .expect("acquired after release");
        assert!(releaser.join().expect("thread"));
        assert!(next.fence > held.fence);
    });
}

#[test]
fn the_guard_releases_on_drop_but_never_someone_elses_lock() {
    let server = support::server();
    let mut a = redis_patterns::Connection::open(server.url()).expect("connect");
    let mut b = redis_patterns::Connection::open(server.url()).expect("connect");
    let lock = Lock::new("guard", Duration::from_secs(5)).expect("valid");
    {
        let guard = lock.guard(&mut a, Duration::from_secs(1)).expect("acquire");
        assert_eq!(guard.fence(), 1);
    }
    let key = lock.key().to_string();
    let read = |c: &mut redis_patterns::Connection| -> Option<String> {
        c.query(redis::cmd("GET").arg(&key)).expect("GET")
    };
    assert_eq!(read(&mut b), None, "dropped guard released");

    let short = Lock::new("guard", Duration::from_millis(40)).expect("valid");
    let guard = short
        .guard(&mut a, Duration::from_secs(1))
        .expect("acquire");
    thread::sleep(Duration::from_millis(70));
    let other = redis_patterns::Request::run(lock.try_acquire(), &mut b).expect("expired, free");
    drop(guard); // must not delete `other`'s lock
    assert_eq!(read(&mut b), Some(other.token.clone()));
    assert!(matches!(
        lock.guard(&mut a, Duration::ZERO)
            .map_err(|e| e.into_kind()),
        Err(ErrorKind::LockTimeout { .. })
    ));
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let cluster = support::cluster();
    support::each_cluster_driver(&cluster, |d| {
        for name in ["a", "b", "c", "d", "e", "f"] {
            let lock = Lock::new(name, Duration::from_secs(5)).expect("valid");
            let lease = d
                .run(lock.acquire(Duration::from_secs(1)))
                .expect("acquire");
            assert!(d.run(lock.try_acquire()).unwrap_err().is_busy());
            assert!(
                d.run(lock.extend(&lease.token, Duration::from_secs(9)))
                    .unwrap()
            );
            assert!(d.run(lock.owned(&lease.token)).unwrap().unwrap() > Duration::from_secs(5));
            assert!(d.run(lock.release(&lease.token)).unwrap());
            assert_eq!(d.run(lock.try_acquire()).unwrap().fence, 2);
        }
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let server = support::server();
    let mut con = server.connection();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .expect("RESETSTAT");
    let invalid =
        |r: redis_patterns::Result<Lock>, name: &str| match r.as_ref().map_err(|e| e.kind()) {
            Err(ErrorKind::InvalidArgument {
                name: n,
                reason,
                script: None,
            }) => {
                assert_eq!(n, name);
                assert!(!reason.is_empty() && !reason.ends_with('.'));
            }
            other => panic!("expected InvalidArgument({name}), got {other:?}"),
        };
    invalid(Lock::new("", Duration::from_secs(1)), "lock name");
    invalid(Lock::new("a{b}", Duration::from_secs(1)), "lock name");
    assert!(Prefix::new("p{").is_err());
    assert!(Prefix::new("").is_err());
    assert_eq!(Prefix::new(DEFAULT_PREFIX).unwrap().as_str(), "redis:lock:");
    invalid(Lock::new("a", Duration::ZERO), "lease");
    invalid(Lock::new("a", Duration::from_micros(999)), "lease");
    invalid(
        Lock::new("a", Duration::from_millis(MAX_LEASE_MS + 1)),
        "lease",
    );
    invalid(
        Lock::builder("a").retry_interval(Duration::ZERO).build(),
        "retry interval",
    );
    let lock = Lock::new("a", Duration::from_secs(1)).expect("valid");
    support::each_driver(&server, |d| {
        let name_of = |r: redis_patterns::Result<bool>| match r.map_err(|e| e.into_kind()) {
            Err(ErrorKind::InvalidArgument {
                name, script: None, ..
            }) => name,
            other => panic!("expected InvalidArgument, got {other:?}"),
        };
        assert_eq!(name_of(d.run(lock.release(""))), "token");
        assert_eq!(name_of(d.run(lock.extend("t", Duration::ZERO))), "lease");
        assert_eq!(
            name_of(d.run(lock.extend("", Duration::from_secs(1)))),
            "token"
        );
        assert!(matches!(
            d.run(lock.owned("")).map_err(|e| e.into_kind()),
            Err(ErrorKind::InvalidArgument { name, .. }) if name == "token"
        ));
    });
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut con)
        .expect("INFO");
    assert!(
        !stats.contains("cmdstat_evalsha"),
        "nothing was sent: {stats}"
    );
}
