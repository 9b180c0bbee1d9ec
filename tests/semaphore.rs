//! The semaphore with expiring permits against a real redis-server and a
//! real three-node cluster, every test body through both drivers.

#[path = "support/leased.rs"]
mod leased;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use leased::{assert_invalid, assert_no_script_call, waiter};
use redis_patterns::ErrorKind;
use redis_patterns::scripts::semaphore::ACQUIRE_LIMIT_MAX;
use redis_patterns::semaphore::Semaphore;
use support::Driver;

/// 8 threads × 100 acquisitions of a 3-permit semaphore: no more than 3
/// hold it at once (counted in-process between acquire and release, which
/// lies inside the permit's hold on the server).
fn at_most_n_holders(d: &mut Driver, url: &str) {
    let sem = Semaphore::new("exports", 3, Duration::from_secs(10)).expect("valid");
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (sem, now, most, mut d) = (sem.clone(), now.clone(), most.clone(), d.another(url));
            thread::spawn(move || {
                for _ in 0..100 {
                    let permit = d
                        .run(sem.acquire(Duration::from_secs(60)))
                        .expect("acquire");
                    let holders = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(holders, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(1));
                    now.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(
                        d.run(sem.release(&permit.token)).expect("release"),
                        Some(true)
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        (1..=3).contains(&most),
        "{}: {most} holders at once",
        d.name()
    );
    let left: i64 = d.cmd(sem.key(), redis::cmd("EXISTS").arg(sem.key()));
    assert_eq!(left, 0, "every permit given back");
}

support::server_and_cluster_tests!(
    at_most_n_holders:
    never_more_than_n_holders_under_8_threads,
    never_more_than_n_holders_on_a_real_cluster
);

#[test]
fn a_crashed_holders_permit_returns_at_the_end_of_its_lease() {
    support::on_server(|d| {
        let sem = Semaphore::new("crash", 2, Duration::from_millis(400)).expect("valid");
        // Two holders that crash: they never release.
        d.run(sem.try_acquire()).expect("first");
        d.run(sem.try_acquire()).expect("second");
        match d.run(sem.try_acquire()).map_err(|e| e.into_kind()) {
            Err(ErrorKind::NoPermit {
                key,
                retry_after_ms: Some(ms),
            }) => {
                assert_eq!(key, sem.key());
                assert!(ms > 0 && ms <= 400, "{ms}");
            }
            other => panic!("expected NoPermit, got {other:?}"),
        }
        let permit = d
            .run(sem.acquire(Duration::from_secs(30)))
            .expect("a permit after the crashed holders' leases");
        assert_eq!(d.run(sem.release(&permit.token)).unwrap(), Some(true));
    });
}

#[test]
fn a_release_wakes_a_waiter() {
    support::on_server_at(|d, url| {
        // A 600 s lease and a 120 s deadline: only the release's message
        // can hand the permit over.
        let sem = Semaphore::new("one", 1, Duration::from_secs(600)).expect("valid");
        let held = d.run(sem.try_acquire()).expect("free");
        let waiter = waiter(d, url, sem.acquire(Duration::from_secs(120)), sem.channel());
        thread::sleep(Duration::from_millis(100));
        assert_eq!(d.run(sem.release(&held.token)).unwrap(), Some(true));
        let next = waiter.join().unwrap().expect("woken by the release");
        assert_ne!(next.token, held.token);
    });
}

#[test]
fn release_extend_and_retries_with_the_holders_token() {
    support::on_server(|d| {
        let sem = Semaphore::new("ops", 1, Duration::from_secs(30)).expect("valid");
        let token = "my-retry-token";
        let permit = d.run(sem.try_acquire_as(token)).expect("free");
        assert_eq!(permit.token, token);
        // A retry after a lost reply: the same permit, not a second one.
        assert_eq!(d.run(sem.try_acquire_as(token)).expect("its own"), permit);
        assert!(d.run(sem.try_acquire()).unwrap_err().is_busy());
        assert!(d.run(sem.extend(token, Duration::from_secs(300))).unwrap());
        assert!(
            !d.run(sem.extend("stranger", Duration::from_secs(300)))
                .unwrap()
        );
        let ends: f64 = d.cmd(sem.key(), redis::cmd("ZSCORE").arg(sem.key()).arg(token));
        let pttl: i64 = d.cmd(sem.key(), redis::cmd("PTTL").arg(sem.key()));
        assert!(
            ends > 0.0 && pttl > 30_000,
            "extended, and the key lives as long"
        );
        assert_eq!(d.run(sem.release("stranger")).unwrap(), Some(false));
        assert_eq!(d.run(sem.release(token)).unwrap(), Some(true));
        assert_eq!(
            d.run(sem.release(token)).unwrap(),
            Some(false),
            "nothing left"
        );
        let expired = Semaphore::new("ops", 1, Duration::from_millis(30)).expect("valid");
        let short = d.run(expired.try_acquire()).unwrap();
        thread::sleep(Duration::from_millis(60));
        assert!(
            !d.run(expired.extend(&short.token, Duration::from_secs(1)))
                .unwrap()
        );
        assert_eq!(
            d.run(expired.release(&short.token)).unwrap(),
            Some(false),
            "its lease had ended"
        );
    });
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    support::on_cluster(|d| {
        for name in ["a", "b", "c", "d", "e", "f"] {
            let sem = Semaphore::new(name, 2, Duration::from_secs(5)).expect("valid");
            let one = d.run(sem.acquire(Duration::from_secs(1))).unwrap();
            let two = d.run(sem.try_acquire()).unwrap();
            assert!(d.run(sem.try_acquire()).unwrap_err().is_busy());
            assert!(
                d.run(sem.extend(&one.token, Duration::from_secs(9)))
                    .unwrap()
            );
            assert_eq!(d.run(sem.release(&one.token)).unwrap(), Some(true));
            assert_eq!(d.run(sem.release(&two.token)).unwrap(), Some(true));
        }
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let server = support::server();
    assert_no_script_call(&server, || {
        assert_invalid(
            Semaphore::new("", 1, Duration::from_secs(1)),
            "semaphore name",
        );
        assert_invalid(
            Semaphore::new("a{b}", 1, Duration::from_secs(1)),
            "semaphore name",
        );
        assert_invalid(Semaphore::new("a", 0, Duration::from_secs(1)), "limit");
        assert_invalid(
            Semaphore::new("a", ACQUIRE_LIMIT_MAX as u32 + 1, Duration::from_secs(1)),
            "limit",
        );
        assert_invalid(Semaphore::new("a", 1, Duration::ZERO), "lease");
        let sem = Semaphore::new("a", 1, Duration::from_secs(1)).unwrap();
        assert!(sem.key().starts_with(Semaphore::DEFAULT_PREFIX));
        support::each_driver(&server, |d| {
            for r in [
                d.run(sem.release("")).map(drop),
                d.run(sem.extend("", Duration::from_secs(1))).map(drop),
                d.run(sem.extend("t", Duration::ZERO)).map(drop),
            ] {
                assert!(r.unwrap_err().is_invalid_input());
            }
            assert!(
                d.run(sem.try_acquire_as(""))
                    .unwrap_err()
                    .is_invalid_input()
            );
        });
    });
}
