//! The owner-token lock against a real redis-server and a real three-node
//! cluster, every test body through both drivers (sync `Connection`, async
//! `AsyncConnection`): mutual exclusion with woken waiters, wake-ups lost
//! and survived, renewal, retries with the caller's token, fencing with
//! replica acknowledgement across a failover.

#[path = "support/leased.rs"]
mod leased;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use leased::{assert_invalid, assert_no_script_call, eventually, subscribers, waiter};
use redis::Value;
use redis_patterns::core::WaitStats;
use redis_patterns::lease::{AsyncGuard, Guard, LostReason, WaitMode};
use redis_patterns::lock::{Lease, Lock, Replication};
use redis_patterns::{ErrorKind, keys::Prefix, scripts};
use redis_patterns_test_support::LocalCluster;
use support::Driver;

fn get(d: &mut Driver, key: &str) -> Option<String> {
    d.cmd(key, redis::cmd("GET").arg(key))
}

fn pttl(d: &mut Driver, key: &str) -> i64 {
    d.cmd(key, redis::cmd("PTTL").arg(key))
}

/// 8 threads × 500 acquisitions, each a non-atomic GET/SET under the lock:
/// the counter ends at exactly 4000 and every acquisition got its own
/// fencing token. Waiters are woken by the releases (the default).
fn racy_counter(d: &mut Driver, url: &str) {
    let lock = Lock::new("counter", Duration::from_secs(10)).expect("valid lock");
    assert_eq!(lock.wait_mode(), WaitMode::Notified);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let lock = lock.clone();
            let mut d = d.another(url);
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
                    assert_eq!(
                        d.run(lock.release(&lease.token)).expect("release"),
                        Some(true),
                        "still the owner"
                    );
                }
                fences
            })
        })
        .collect();
    let per_thread: Vec<Vec<u64>> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    for fences in &per_thread {
        assert!(
            fences.windows(2).all(|w| w[0] < w[1]),
            "a later acquisition has a greater fencing token"
        );
    }
    let mut fences: Vec<u64> = per_thread.into_iter().flatten().collect();
    assert_eq!(get(d, "counter").as_deref(), Some("4000"), "{}", d.name());
    fences.sort_unstable();
    fences.dedup();
    assert_eq!(
        fences.len(),
        4000,
        "every acquire got its own fencing token"
    );
    assert_eq!(get(d, lock.key()), None, "released at the end");
}

support::server_and_cluster_tests!(
    racy_counter:
    mutual_exclusion_with_woken_waiters_keeps_a_racy_counter_exact,
    mutual_exclusion_with_woken_waiters_on_a_real_cluster
);

/// The holder's lease is 600 s and the waiter's deadline 120 s, and the
/// waiter never polls: only the release's message can hand it the lock.
#[test]
fn a_release_wakes_the_waiter_on_a_server_and_a_cluster() {
    support::on_server_and_cluster_at(|d, url| {
        let lock = Lock::new("handoff", Duration::from_secs(600)).expect("valid");
        let held = d.run(lock.try_acquire()).expect("free");
        let waiter = waiter(
            d,
            url,
            lock.acquire(Duration::from_secs(120)),
            lock.channel(),
        );
        // Most likely the waiter is in its wait by now (if not, its re-check
        // after subscribing finds the lock free: the handoff is correct either way).
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            d.run(lock.release(&held.token)).expect("release"),
            Some(true)
        );
        let next = waiter
            .join()
            .expect("waiter thread")
            .expect("woken by the release long before the holder's lease or its own deadline");
        assert!(next.fence > held.fence);
        assert_eq!(get(d, lock.key()), Some(next.token.clone()));
        assert_eq!(d.run(lock.release(&next.token)).unwrap(), Some(true));
    });
}

#[test]
fn a_lost_wake_up_costs_at_most_the_holders_lease() {
    let server = support::server();
    let url = server.url();
    support::each_driver(&server, |d| {
        // A holder that crashed: no release, no message; the lease ends.
        let lock = Lock::new("crashed", Duration::from_millis(400)).expect("valid");
        let gone = d.run(lock.try_acquire()).expect("free");
        // Its waits were subscribed, and no message came: they timed out.
        let stats = waited_out(d, &lock, &gone);
        assert!(stats.timed_out >= 1, "{}: {stats:?}", d.name());
        assert_eq!((stats.unsubscribed, stats.last_refusal), (0, None));

        // The waiter's subscription is killed, then the lock is deleted
        // without a message: the waiter still gets it, by the holder's lease.
        let lock = Lock::new("dropped", Duration::from_millis(1500)).expect("valid");
        let held = d.run(lock.try_acquire()).expect("free");
        let waiter = waiter(
            d,
            &url,
            lock.acquire(Duration::from_secs(30)),
            lock.channel(),
        );
        let killed: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("pubsub")
            .query(&mut server.connection())
            .expect("CLIENT KILL TYPE pubsub");
        assert!(killed >= 1, "the waiter's subscription was dropped");
        let _: () = d.cmd(lock.key(), redis::cmd("DEL").arg(lock.key())); // no message
        let next = waiter
            .join()
            .expect("waiter thread")
            .expect("taken without a wake-up");
        assert!(next.fence > held.fence);
    });
}

#[test]
fn polling_mode_still_hands_over_and_times_out() {
    support::on_server_at(|d, url| {
        let lock = Lock::builder("polled")
            .lease(Duration::from_secs(30))
            .wait_mode(WaitMode::Polling {
                interval: Duration::from_millis(5),
            })
            .build()
            .expect("valid");
        let held = d.run(lock.try_acquire()).expect("free");
        let releaser = {
            let (lock, mut o, token) = (lock.clone(), d.another(url), held.token.clone());
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(50));
                o.run(lock.release(&token)).expect("release")
            })
        };
        let next = d
            .run(lock.acquire(Duration::from_secs(30)))
            .expect("polled until free");
        assert_eq!(releaser.join().unwrap(), Some(true));
        assert!(next.fence > held.fence);
        assert_eq!(
            subscribers(d, lock.channel()),
            0,
            "polling never subscribes"
        );
    });
}

#[test]
fn only_the_owner_can_release_or_extend() {
    support::on_server(|d| {
        let lock = Lock::new("job", Duration::from_secs(30)).expect("valid");
        let lease = d.run(lock.try_acquire()).expect("free lock");
        assert_eq!(lease.token.len(), 32);
        assert!(lease.token.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            d.run(lock.release("intruder")).expect("release"),
            Some(false)
        );
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
        assert_eq!(
            d.run(lock.release(&lease.token)).expect("release"),
            Some(true)
        );
        assert_eq!(
            d.run(lock.release(&lease.token)).expect("second release"),
            Some(false),
            "nothing left to release"
        );
    });
}

#[test]
fn an_acquire_retried_with_its_own_token_gets_the_same_fencing_token() {
    support::on_server(|d| {
        let lock = Lock::new("retried", Duration::from_secs(30)).expect("valid");
        let token = "retry-after-an-unknown-outcome";
        let first = d.run(lock.try_acquire_as(token)).expect("free");
        assert_eq!(first.token, token);
        let _: () = d.cmd(lock.key(), redis::cmd("PEXPIRE").arg(lock.key()).arg(1000));
        // The reply was lost; the caller sends the same acquire again.
        let again = d.run(lock.try_acquire_as(token)).expect("its own lock");
        assert_eq!(again, first, "the same lease and fencing token");
        assert!(pttl(d, lock.key()) > 1000, "with a fresh lease");
        assert_eq!(
            d.run(lock.acquire_as(token, Duration::from_secs(1)))
                .expect("blocking form too")
                .fence,
            first.fence
        );
        assert!(
            d.run(lock.try_acquire()).unwrap_err().is_busy(),
            "others wait"
        );
        assert_eq!(d.run(lock.release(token)).unwrap(), Some(true));
        let next = d.run(lock.try_acquire_as(token)).expect("free again");
        assert!(next.fence > first.fence, "a new acquisition");
    });
}

#[test]
fn try_acquire_on_a_held_lock_is_busy_with_the_remaining_lease() {
    support::on_server(|d| {
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
    support::on_server(|d| {
        // A short first lease; the next owner takes a long one, so that a
        // slow machine cannot let it run out before the checks below.
        let short = Lock::new("lease", Duration::from_millis(50)).expect("valid");
        let lock = Lock::new("lease", Duration::from_secs(30)).expect("valid");
        let first = d.run(short.try_acquire()).expect("free");
        thread::sleep(Duration::from_millis(80));
        let second = d.run(lock.try_acquire()).expect("expired lease is free");
        assert!(second.fence > first.fence);
        assert_eq!(
            d.run(lock.release(&first.token)).expect("late release"),
            Some(false)
        );
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
                assert_eq!(
                    d.run(lock.release(&lease.token)).expect("release"),
                    Some(true)
                );
            } else {
                let _: () = d.cmd(lock.key(), redis::cmd("DEL").arg(lock.key())); // as if the lease expired
            }
        }
    });
}

#[test]
fn blocking_acquire_times_out_with_a_typed_error() {
    support::on_server(|d| {
        let lock = Lock::new("wait", Duration::from_secs(30)).expect("valid");
        let _held = d.run(lock.try_acquire()).expect("free");
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
        // Zero timeout: exactly one attempt.
        assert!(matches!(
            d.run(lock.acquire(Duration::ZERO))
                .map_err(|e| e.into_kind()),
            Err(ErrorKind::LockTimeout { .. })
        ));
    });
}

#[test]
fn status_reports_the_holder_lease_and_the_fencing_counter() {
    support::on_server(|d| {
        let lock = Lock::new("status", Duration::from_secs(30)).expect("valid");
        let free = d.run(lock.status()).unwrap();
        assert_eq!(
            (free.held, free.remaining_lease_ms, free.fence),
            (false, None, 0)
        );
        let lease = d.run(lock.try_acquire()).unwrap();
        let held = d.run(lock.status()).unwrap();
        assert!(held.held && held.fence == lease.fence && held.key == lock.key());
        let left = held.remaining_lease_ms.expect("a lease");
        assert!(left > 0 && left <= 30_000, "{left}");
        let json = serde_json::to_value(&held).unwrap();
        assert_eq!(json["fence"], lease.fence);
    });
}

/// The guard renews across more than five leases while its holder works,
/// then reports the loss, with its fencing token, once the key is deleted
/// behind its back.
#[test]
fn the_guard_renews_across_leases_and_reports_a_loss() {
    support::on_server(|d| {
        // Renewed every lease/3, the lease survives a renewal stalled for up
        // to 1.6 s (a loaded machine).
        let lock = Lock::new("renewed", Duration::from_millis(2400)).expect("valid");
        let key = lock.key().to_string();
        let mut del = redis::cmd("DEL");
        del.arg(&key);
        // What each guard saw once the key was gone: the loss, its fencing
        // token, `check` and the release.
        let (lost, fence, check, released) = match d {
            Driver::Sync(con) => {
                let mut guard =
                    Guard::acquire(&lock, con, Duration::from_secs(5)).expect("acquire");
                let started = Instant::now();
                while started.elapsed() < lock.lease() * 2 + lock.lease() / 2 {
                    thread::sleep(Duration::from_millis(50)); // the work
                    guard.check().expect("held while renewed");
                }
                let owner: Option<String> =
                    guard.conn().query(redis::cmd("GET").arg(&key)).unwrap();
                assert_eq!(owner.as_deref(), Some(guard.token()), "still ours");
                let _: () = guard.conn().query(&del).unwrap();
                eventually("the loss is reported", || guard.lost().is_some());
                let lost = guard.lost().unwrap();
                (lost, guard.fence(), guard.check(), guard.release())
            }
            Driver::Async(con, rt) => rt.block_on(async {
                let guard = AsyncGuard::acquire(&lock, con, Duration::from_secs(5))
                    .await
                    .expect("acquire");
                let started = Instant::now();
                while started.elapsed() < lock.lease() * 2 + lock.lease() / 2 {
                    tokio::time::sleep(Duration::from_millis(50)).await; // the work
                    guard.check().expect("held while renewed");
                }
                let owner: Option<String> = con.query(redis::cmd("GET").arg(&key)).await.unwrap();
                assert_eq!(owner.as_deref(), Some(guard.held().token()), "still ours");
                let _: () = con.query(&del).await.unwrap();
                let lost =
                    tokio::time::timeout(Duration::from_secs(30), guard.held().lost_signal())
                        .await
                        .expect("the loss is reported");
                (lost, guard.fence(), guard.check(), guard.release().await)
            }),
        };
        assert_eq!((lost.fence, lost.reason), (fence, LostReason::NotOwned));
        match check.map_err(|e| e.into_kind()) {
            Err(ErrorKind::LockLost { fence: f, .. }) => assert_eq!(f, fence),
            other => panic!("expected LockLost, got {other:?}"),
        }
        assert_eq!(released.unwrap(), Some(false), "nothing left to release");
    });
}

/// Dropping a guard releases the lock, but never someone else's; the
/// scoped async form returns the section's output, or `LockLost` when the
/// lease was lost while it ran.
#[test]
fn guards_release_on_drop_and_the_scoped_form_reports_a_loss() {
    support::on_server(|d| {
        let lock = Lock::new("guard", Duration::from_secs(5)).expect("valid");
        let short = Lock::new("guard", Duration::from_millis(300)).expect("valid");
        let key = lock.key().to_string();
        match d {
            Driver::Sync(con) => {
                {
                    let guard =
                        Guard::acquire(&lock, con, Duration::from_secs(1)).expect("acquire");
                    assert!(guard.fence() > 0);
                }
                let mut other = con.try_clone().expect("another connection");
                let read = |c: &mut redis_patterns::Connection| -> Option<String> {
                    c.query(redis::cmd("GET").arg(&key)).expect("GET")
                };
                assert_eq!(read(&mut other), None, "dropped guard released");
                let fence = {
                    let guard =
                        Guard::acquire(&short, con, Duration::from_secs(1)).expect("acquire");
                    // Taken over: someone deletes it and takes it.
                    let _: () = other.query(redis::cmd("DEL").arg(&key)).unwrap();
                    let theirs = redis_patterns::Request::run(lock.try_acquire(), &mut other)
                        .expect("free after the delete");
                    eventually("the loss is reported", || guard.lost().is_some());
                    assert_eq!(
                        read(&mut other),
                        Some(theirs.token.clone()),
                        "never renewed"
                    );
                    guard.fence()
                };
                assert!(
                    read(&mut other).is_some(),
                    "the dropped guard left the new owner's lock ({fence})"
                );
            }
            Driver::Async(con, rt) => rt.block_on(async {
                let first = lock
                    .with_lock(
                        con,
                        Duration::from_secs(1),
                        |held| async move { held.fence() },
                    )
                    .await
                    .expect("the section's output");
                assert!(first > 0);
                let free: Option<String> = con.query(redis::cmd("GET").arg(&key)).await.unwrap();
                assert_eq!(free, None, "released after the section");
                let other = con.clone();
                let lost = short
                    .with_lock(con, Duration::from_secs(1), |held| async move {
                        let _: () = other
                            .query(redis::cmd("DEL").arg(held.key()))
                            .await
                            .unwrap();
                        held.lost_signal().await
                    })
                    .await;
                match lost.map_err(|e| e.into_kind()) {
                    Err(ErrorKind::LockLost { fence, .. }) => assert!(fence > first),
                    other => panic!("expected LockLost, got {other:?}"),
                }
                // A dropped async guard has its task release the lock.
                let guard = AsyncGuard::acquire(&lock, con, Duration::from_secs(1))
                    .await
                    .expect("acquire");
                drop(guard);
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let held: Option<String> =
                        con.query(redis::cmd("GET").arg(&key)).await.unwrap();
                    if held.is_none() {
                        break;
                    }
                    assert!(Instant::now() < deadline, "the dropped guard released");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }),
        }
    });
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    support::on_cluster(|d| {
        for name in ["a", "b", "c", "d", "e", "f"] {
            let lock = Lock::new(name, Duration::from_secs(5)).expect("valid");
            let lease = d
                .run(lock.acquire(Duration::from_secs(1)))
                .expect("acquire");
            assert!(d.run(lock.try_acquire()).unwrap_err().is_busy());
            assert_eq!(d.run(lock.try_acquire_as(&lease.token)).unwrap(), lease);
            assert!(
                d.run(lock.extend(&lease.token, Duration::from_secs(9)))
                    .unwrap()
            );
            assert!(d.run(lock.owned(&lease.token)).unwrap().unwrap() > Duration::from_secs(5));
            assert!(d.run(lock.status()).unwrap().held);
            assert_eq!(d.run(lock.release(&lease.token)).unwrap(), Some(true));
            let second = d.run(lock.try_acquire()).unwrap().fence;
            assert!(second > lease.fence);
            // Auto asks the lock's own primary (INFO with the key's slot):
            // no replicas here, so no WAIT.
            let auto = Lock::builder(name)
                .replication(Replication::Auto)
                .lease(Duration::from_secs(5))
                .build()
                .unwrap();
            let _: () = d.cmd(lock.key(), redis::cmd("DEL").arg(lock.key()));
            assert!(d.run(auto.acquire(Duration::from_secs(1))).unwrap().fence > second);
        }
    });
}

#[test]
fn an_acknowledged_acquire_without_replicas_fails_cleanly_and_auto_does_not_wait() {
    support::on_server(|d| {
        let lock = Lock::builder("replicated")
            .replication(Replication::Acknowledged {
                replicas: 1,
                timeout: Duration::from_millis(50),
            })
            .build()
            .expect("valid");
        let refused = match d.run(lock.try_acquire()).map_err(|e| e.into_kind()) {
            Err(ErrorKind::NotReplicated {
                key,
                fence,
                acked,
                wanted,
            }) => {
                assert_eq!((key.as_str(), acked, wanted), (lock.key(), 0, 1));
                let status = d.run(lock.status()).unwrap();
                assert!(!status.held, "released: its token is never used");
                assert_eq!(status.fence, fence);
                fence
            }
            other => panic!("expected NotReplicated, got {other:?}"),
        };
        let auto = Lock::builder("replicated")
            .replication(Replication::Auto)
            .build()
            .unwrap();
        let lease = d
            .run(auto.acquire(Duration::from_secs(1)))
            .expect("no replicas: no WAIT");
        assert!(lease.fence > refused);
    });
}

/// On a server with a replica: an acknowledged acquire returns once the
/// replica has the write, `Auto` finds the replica and waits for it too, and
/// a flushed script cache (the acquire answers `NOSCRIPT` while the `WAIT`
/// after it ran) is reloaded and both are sent again, in order.
#[test]
fn an_acknowledged_acquire_waits_for_the_replica_even_after_a_script_flush() {
    let primary = support::server();
    let replica = support::linked_replica(&primary);
    eventually("the primary has its replica", || {
        primary.info("replication").contains("connected_slaves:1")
    });
    support::each_driver(&primary, |d| {
        for replication in [Replication::DEFAULT_ACKNOWLEDGED, Replication::Auto] {
            let lock = Lock::builder("acked")
                .replication(replication)
                .build()
                .expect("valid");
            let _: () = redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query(&mut primary.connection())
                .unwrap();
            let lease = d
                .run(lock.try_acquire())
                .expect("acknowledged by the replica");
            let on_replica: Option<String> = redis::cmd("GET")
                .arg(lock.key())
                .query(&mut replica.connection())
                .unwrap();
            assert_eq!(on_replica, Some(lease.token.clone()), "the replica had it");
            assert_eq!(d.run(lock.release(&lease.token)).unwrap(), Some(true));
        }
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let server = support::server();
    assert_no_script_call(&server, || {
        assert_invalid(Lock::new("", Duration::from_secs(1)), "lock name");
        assert_invalid(Lock::new("a{b}", Duration::from_secs(1)), "lock name");
        assert!(Prefix::new("p{").is_err());
        assert!(Prefix::new("").is_err());
        assert_eq!(
            Prefix::new(Lock::DEFAULT_PREFIX).unwrap().as_str(),
            "redis:lock:"
        );
        assert_invalid(Lock::new("a", Duration::ZERO), "lease");
        assert_invalid(Lock::new("a", Duration::from_micros(999)), "lease");
        assert_invalid(
            Lock::new(
                "a",
                Duration::from_millis(scripts::lock::ACQUIRE_LEASE_MS_MAX as u64 + 1),
            ),
            "lease",
        );
        assert_invalid(
            Lock::builder("a")
                .wait_mode(WaitMode::Polling {
                    interval: Duration::ZERO,
                })
                .build(),
            "poll interval",
        );
        assert_invalid(
            Lock::builder("a")
                .replication(Replication::Acknowledged {
                    replicas: 0,
                    timeout: Duration::from_secs(1),
                })
                .build(),
            "replicas",
        );
        let lock = Lock::new("a", Duration::from_secs(1)).expect("valid");
        support::each_driver(&server, |d| {
            fn name_of<T: std::fmt::Debug>(r: redis_patterns::Result<T>) -> String {
                match r.map_err(|e| e.into_kind()) {
                    Err(ErrorKind::InvalidArgument {
                        name, script: None, ..
                    }) => name,
                    other => panic!("expected InvalidArgument, got {other:?}"),
                }
            }
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
            assert!(matches!(
                d.run(lock.try_acquire_as("")).map_err(|e| e.into_kind()),
                Err(ErrorKind::InvalidArgument { name, .. }) if name == "token"
            ));
        });
    });
}

#[test]
fn a_release_refuses_a_channel_outside_the_locks_slot_and_a_user_denied_the_channel() {
    let server = support::server();
    let mut con = server.connection();
    support::each_driver(&server, |d| {
        let lock = Lock::new("chan", Duration::from_secs(30)).expect("valid");
        let lease = d.run(lock.try_acquire()).unwrap();
        let call = support::raw_call::<i64>(
            &redis_patterns::scripts::LOCK_RELEASE,
            &[lock.key(), lock.queue_key(), lock.places_key()],
            &[&lease.token, "elsewhere:wake"],
        );
        match d.run(call).map_err(|e| e.into_kind()) {
            Err(ErrorKind::InvalidArgument { name, script, .. }) => {
                assert_eq!((name.as_str(), script), ("channel", Some("lock.release")));
            }
            other => panic!("expected BADARG channel, got {other:?}"),
        }
        assert_eq!(
            get(d, lock.key()),
            Some(lease.token.clone()),
            "nothing written"
        );
    });
    // A user that may use the keys but not publish on the channel: refused
    // before the delete (the generated ACL check names the channel).
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("nochan")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("resetchannels")
        .arg("+@all")
        .query(&mut con)
        .unwrap();
    let lock = Lock::new("chan2", Duration::from_secs(30)).expect("valid");
    let url = format!("redis://nochan:pw@127.0.0.1:{}/", server.port());
    for mut d in support::drivers(&url) {
        let lease = d.run(lock.try_acquire()).unwrap();
        let err = d
            .run(lock.release(&lease.token))
            .expect_err("no channel permission");
        assert_eq!(
            err.server_kind(),
            Some(redis_patterns::ServerErrorKind::NoPermission),
            "{err}"
        );
        assert!(
            err.to_string().contains(&format!(
                "'spublish' command on the channel {}:wake",
                lock.key()
            )),
            "the refusal names the channel: {err}"
        );
        assert_eq!(
            get(&mut d, lock.key()),
            Some(lease.token.clone()),
            "not deleted"
        );
        let _: () = d.cmd(lock.key(), redis::cmd("DEL").arg(lock.key()));
        // Its waits cannot subscribe either: they sleep out their timeouts
        // (the lock is still taken, after the holder's lease), and the
        // connection's wait stats say why.
        let holder = Lock::new("chan3", Duration::from_millis(300)).expect("valid");
        let mut admin = support::connect(&server.url());
        let held = redis_patterns::Request::run(holder.try_acquire(), &mut admin).unwrap();
        let stats = waited_out(&mut d, &holder, &held);
        assert!(stats.unsubscribed >= 1, "{}: {stats:?}", d.name());
        assert_eq!(stats.woken, 0);
        assert!(
            stats
                .last_refusal
                .as_deref()
                .is_some_and(|r| r.starts_with("NOPERM")),
            "{stats:?}"
        );
        let _: () = d.cmd(holder.key(), redis::cmd("DEL").arg(holder.key()));
    }
    // A user denied a command the body runs before any write (GET, which
    // no generated check probes): the server's refusal names the line, the
    // error names the command and its key.
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("noget")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("allchannels")
        .arg("+@all")
        .arg("-get")
        .query(&mut con)
        .unwrap();
    let url = format!("redis://noget:pw@127.0.0.1:{}/", server.port());
    let lock = Lock::new("chan4", Duration::from_secs(30)).expect("valid");
    for mut d in support::drivers(&url) {
        let err = d.run(lock.release("t")).expect_err("GET is denied");
        assert_eq!(
            err.server_kind(),
            Some(redis_patterns::ServerErrorKind::NoPermission),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("denied: GET on KEYS[1] (lock), line "),
            "the refusal names the command and its key: {err}"
        );
    }
}

/// Acquires `lock`, held by `gone`, a holder that never releases it,
/// through `d`, which waits out the holder's lease (no message comes);
/// returns what `d`'s waits met.
fn waited_out(d: &mut Driver, lock: &Lock, gone: &Lease) -> WaitStats {
    let next = d
        .run(lock.acquire(Duration::from_secs(30)))
        .expect("taken after the holder's lease, without a message");
    assert!(next.fence > gone.fence);
    d.wait_stats()
}

/// The slot ranges the node on `port` serves (from `CLUSTER SLOTS`).
fn slots_of(con: &mut redis::Connection, port: u16) -> Vec<(u16, u16)> {
    let rows: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(con).unwrap();
    rows.into_iter()
        .filter_map(|row| {
            let Value::Array(row) = row else { return None };
            let (Value::Int(a), Value::Int(b), Value::Array(primary)) = (&row[0], &row[1], &row[2])
            else {
                return None;
            };
            (primary.get(1) == Some(&Value::Int(i64::from(port)))).then_some((*a as u16, *b as u16))
        })
        .collect()
}

/// Acquisitions with replica acknowledgement run while a primary is killed,
/// its replica takes over and the old primary comes back as a replica: every
/// fencing token handed out is greater than the one before, per lock.
#[test]
fn replica_acknowledged_fencing_tokens_never_repeat_across_a_failover() {
    let mut cluster = LocalCluster::builder()
        .replicas(1)
        .node_timeout(Duration::from_millis(1000))
        .start()
        .expect("a cluster with replicas");
    for kind in ["sync", "async"] {
        let primaries = cluster.primaries();
        let victim = primaries[if kind == "sync" { 0 } else { 1 }];
        let survivor = *primaries.iter().find(|&&p| p != victim).unwrap();
        let url = cluster.nodes()[survivor].url();
        let port = cluster.nodes()[victim].port();
        let ranges = slots_of(&mut cluster.nodes()[survivor].connection(), port);
        let names: Vec<String> = (0..)
            .map(|i| format!("fo{i}"))
            .filter(|n| {
                let slot = redis_patterns::keys::cluster_slot(n.as_bytes());
                ranges.iter().any(|&(a, b)| (a..=b).contains(&slot))
            })
            .take(3)
            .collect();
        let locks: Vec<Lock> = names
            .iter()
            .map(|n| {
                Lock::builder(n)
                    .lease(Duration::from_secs(2))
                    .replication(Replication::DEFAULT_ACKNOWLEDGED)
                    .build()
                    .unwrap()
            })
            .collect();
        let mut d = support::drivers(&url)
            .into_iter()
            .find(|d| d.name() == kind)
            .unwrap();
        assert!(d.is_cluster());
        let stop = Arc::new(AtomicBool::new(false));
        let switched = Arc::new(AtomicBool::new(false));
        let worker = {
            let (stop, switched) = (stop.clone(), switched.clone());
            thread::spawn(move || {
                let mut fences: Vec<Vec<u64>> = vec![Vec::new(); locks.len()];
                let (mut ok, mut failed, mut after) = (0usize, 0usize, 0usize);
                let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
                let give_up = Instant::now() + Duration::from_secs(90);
                while (!stop.load(Ordering::Relaxed) || after < 30) && Instant::now() < give_up {
                    for (i, lock) in locks.iter().enumerate() {
                        match d.run(lock.try_acquire()) {
                            Ok(lease) => {
                                ok += 1;
                                if switched.load(Ordering::Relaxed) {
                                    after += 1;
                                }
                                fences[i].push(lease.fence);
                                let _ = d.run(lock.release(&lease.token));
                            }
                            Err(e) => {
                                failed += 1;
                                let what = match e.kind() {
                                    ErrorKind::NotReplicated { .. } => "not acknowledged",
                                    ErrorKind::LockBusy { .. } => {
                                        "busy (a release lost in the failover)"
                                    }
                                    _ => "connection or cluster down",
                                };
                                *kinds.entry(what).or_default() += 1;
                                thread::sleep(Duration::from_millis(20));
                            }
                        }
                    }
                }
                (fences, ok, failed, kinds)
            })
        };
        thread::sleep(Duration::from_millis(300));
        cluster.nodes_mut()[victim].kill();
        let replica_took_over = Instant::now() + Duration::from_secs(30);
        while cluster.primaries().len() < 3 {
            assert!(Instant::now() < replica_took_over, "no replica took over");
            thread::sleep(Duration::from_millis(50));
        }
        // The old primary comes back, as a replica of the new one.
        cluster.nodes_mut()[victim]
            .resume()
            .expect("the old primary restarts");
        cluster
            .wait_ready(Duration::from_secs(30))
            .expect("the cluster heals");
        switched.store(true, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        let (fences, ok, failed, kinds) = worker.join().expect("worker");
        for (name, f) in names.iter().zip(&fences) {
            assert!(
                f.windows(2).all(|w| w[1] > w[0]),
                "{kind}: {name}'s fencing tokens repeat or go back: {f:?}"
            );
        }
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        println!(
            "failover ({kind}): {ok} acquisitions acknowledged, {failed} failed during the switch ({})",
            kinds.join(", ")
        );
        assert!(ok > 30, "{kind}: acquisitions resumed after the switch");
    }
}

/// One acquire and release of `lock` on `con`, by the raw script with the
/// clock `now_us` (the server's when empty): the fencing token.
fn fence_at(con: &mut redis_patterns::Connection, lock: &Lock, now_us: &[i64]) -> u64 {
    let token = Lock::new_token();
    let call = redis_patterns::scripts::lock::acquire(
        lock.key(),
        lock.fence_key(),
        lock.queue_key(),
        lock.places_key(),
        &token,
        60_000,
        0,
        false,
        now_us,
    );
    let fence: i64 = redis_patterns::Request::run(call, con).expect("acquire");
    assert!(fence > 0, "free");
    assert_eq!(
        redis_patterns::Request::run(lock.release(&token), con).unwrap(),
        Some(true)
    );
    fence as u64
}

/// A replica promoted after missing the last acquisitions of its primary
/// (its link cut, the primary acquiring on): its tokens are greater than
/// every earlier one while its clock is not behind by more than the
/// failover took — and, with a clock behind by 5 s (the test-only
/// `now_us` argument standing in for the replica's clock), it hands out
/// a token below the old primary's last until its clock catches up. A lock
/// holding a counter of an older version jumps to the clock.
#[test]
fn fencing_tokens_follow_the_clock_across_a_failover_that_lost_increments() {
    let primary = support::server();
    let replica = support::linked_replica(&primary);
    let lock = Lock::new("clock", Duration::from_secs(60)).unwrap();
    let mut p = redis_patterns::Connection::open(primary.url()).unwrap();
    // A counter of an older version (INCR per acquire) jumps to the clock.
    let _: () = redis::cmd("SET")
        .arg(lock.fence_key())
        .arg(1318)
        .query(&mut primary.connection())
        .unwrap();
    let before = fence_at(&mut p, &lock, &[]);
    assert!(before > 1_600_000_000_000_000, "the clock in µs: {before}");
    let replicated: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut primary.connection())
        .unwrap();
    assert_eq!(replicated, 1);
    // The link breaks: the replica takes over, the old primary acquires on.
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut replica.connection())
        .unwrap();
    let missed: Vec<u64> = (0..20).map(|_| fence_at(&mut p, &lock, &[])).collect();
    assert!(missed.windows(2).all(|w| w[0] < w[1]) && missed[0] > before);
    let last = *missed.last().unwrap();
    let mut r = redis_patterns::Connection::open(replica.url()).unwrap();
    // The assumption fails: the new primary's clock is 5 s behind.
    let behind = last as i64 - 5_000_000;
    let stale = fence_at(&mut r, &lock, &[behind]);
    assert!(
        before < stale && stale <= last,
        "a clock behind by more than the failover took repeats tokens: {before} < {stale} <= {last}"
    );
    // The assumption holds: the new primary's own clock, the same machine's.
    let fresh = fence_at(&mut r, &lock, &[]);
    assert!(fresh > last, "{fresh} > {last}");
    assert!(
        fence_at(&mut r, &lock, &[behind]) > fresh,
        "never below its own last"
    );
}
