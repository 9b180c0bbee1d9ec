//! The owner-token lock against a real redis-server.

mod support;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use redis_patterns::lock::{Lock, MAX_LEASE_MS};
use redis_patterns::{Error, ErrorKind};

fn get(con: &mut redis::Connection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(con).expect("GET")
}

#[test]
fn mutual_exclusion_keeps_a_racy_counter_exact() {
    let server = support::server();
    let lock = Arc::new(
        Lock::new("counter", Duration::from_secs(10))
            .and_then(|l| l.retry_interval(Duration::from_millis(2)))
            .expect("valid lock"),
    );
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let lock = Arc::clone(&lock);
            let mut con = server.connection();
            thread::spawn(move || {
                let mut fences = Vec::with_capacity(500);
                for _ in 0..500 {
                    let mut guard = lock
                        .lock(&mut con, Duration::from_secs(60))
                        .expect("acquire");
                    fences.push(guard.fence());
                    // A deliberately non-atomic read-modify-write.
                    let v: Option<i64> = redis::cmd("GET")
                        .arg("counter")
                        .query(guard.conn())
                        .expect("GET");
                    let _: () = redis::cmd("SET")
                        .arg("counter")
                        .arg(v.unwrap_or(0) + 1)
                        .query(guard.conn())
                        .expect("SET");
                    assert!(guard.release().expect("release"), "still the owner");
                }
                fences
            })
        })
        .collect();
    let mut fences: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    let mut con = server.connection();
    assert_eq!(get(&mut con, "counter").as_deref(), Some("4000"));
    fences.sort_unstable();
    fences.dedup();
    assert_eq!(
        fences.len(),
        4000,
        "every acquire got its own fencing token"
    );
    assert_eq!((fences[0], fences[3999]), (1, 4000));
    assert_eq!(get(&mut con, lock.key()), None, "released at the end");
}

#[test]
fn only_the_owner_can_release_or_extend() {
    let server = support::server();
    let mut con = server.connection();
    let lock = Lock::new("job", Duration::from_secs(30)).expect("valid");
    let lease = lock.try_acquire(&mut con).expect("free lock");
    assert_eq!(lease.token.len(), 32);
    assert!(lease.token.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(!lock.release(&mut con, "intruder").expect("release"));
    assert!(
        !lock
            .extend(&mut con, "intruder", Duration::from_secs(300))
            .expect("extend")
    );
    assert_eq!(
        get(&mut con, lock.key()),
        Some(lease.token.clone()),
        "lock intact"
    );
    let pttl: i64 = redis::cmd("PTTL")
        .arg(lock.key())
        .query(&mut con)
        .expect("PTTL");
    assert!(
        pttl <= 30_000 && pttl > 0,
        "lease not extended by the intruder: {pttl}"
    );
    assert!(lock.owned(&mut con, "intruder").expect("owned").is_none());

    assert!(
        lock.extend(&mut con, &lease.token, Duration::from_secs(300))
            .expect("extend")
    );
    let pttl: i64 = redis::cmd("PTTL")
        .arg(lock.key())
        .query(&mut con)
        .expect("PTTL");
    assert!(pttl > 30_000, "owner extended the lease: {pttl}");
    let left = lock
        .owned(&mut con, &lease.token)
        .expect("owned")
        .expect("owner");
    assert!(left > Duration::from_secs(30));
    assert!(lock.release(&mut con, &lease.token).expect("release"));
    assert!(
        !lock
            .release(&mut con, &lease.token)
            .expect("second release"),
        "nothing left to release"
    );
}

#[test]
fn try_acquire_on_a_held_lock_is_busy_with_the_remaining_lease() {
    let server = support::server();
    let (mut a, mut b) = (server.connection(), server.connection());
    let lock = Lock::new("busy", Duration::from_secs(20)).expect("valid");
    let _held = lock.try_acquire(&mut a).expect("free");
    match lock.try_acquire(&mut b).map_err(Error::into_kind) {
        Err(ErrorKind::LockBusy {
            key,
            retry_after_ms: Some(ms),
        }) => {
            assert_eq!(key, lock.key());
            assert!(ms > 0 && ms <= 20_000, "{ms}");
        }
        other => panic!("expected LockBusy, got {other:?}"),
    }
}

#[test]
fn an_expired_lease_goes_to_the_next_owner_and_the_old_one_cannot_touch_it() {
    let server = support::server();
    let (mut a, mut b) = (server.connection(), server.connection());
    let lock = Lock::new("lease", Duration::from_millis(50)).expect("valid");
    let first = lock.try_acquire(&mut a).expect("free");
    thread::sleep(Duration::from_millis(80));
    let second = lock.try_acquire(&mut b).expect("expired lease is free");
    assert!(second.fence > first.fence);
    assert!(!lock.release(&mut a, &first.token).expect("late release"));
    assert!(
        !lock
            .extend(&mut a, &first.token, Duration::from_secs(5))
            .expect("late extend")
    );
    assert_eq!(
        get(&mut b, lock.key()),
        Some(second.token.clone()),
        "the new owner keeps it"
    );
}

#[test]
fn fencing_tokens_strictly_increase_across_owners_and_lock_objects() {
    let server = support::server();
    let mut last = 0;
    for i in 0..20 {
        // A fresh Lock value and connection each time: the counter is server-side.
        let mut con = server.connection();
        let lock = Lock::new("fenced", Duration::from_secs(5)).expect("valid");
        let lease = lock.try_acquire(&mut con).expect("free");
        assert!(
            lease.fence > last,
            "round {i}: {} after {last}",
            lease.fence
        );
        last = lease.fence;
        if i % 2 == 0 {
            assert!(lock.release(&mut con, &lease.token).expect("release"));
        } else {
            let _: () = redis::cmd("DEL")
                .arg(lock.key())
                .query(&mut con)
                .expect("DEL"); // as if the lease expired
        }
    }
}

#[test]
fn blocking_acquire_waits_for_a_release_and_times_out_with_a_typed_error() {
    let server = support::server();
    let (mut a, mut b) = (server.connection(), server.connection());
    let lock = Lock::new("wait", Duration::from_secs(30)).expect("valid");
    let held = lock.try_acquire(&mut a).expect("free");
    let started = std::time::Instant::now();
    match lock
        .acquire(&mut b, Duration::from_millis(200))
        .map_err(Error::into_kind)
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
        lock.acquire(&mut b, Duration::ZERO)
            .map_err(Error::into_kind),
        Err(ErrorKind::LockTimeout { .. })
    ));

    let releaser = {
        let lock = lock.clone();
        let token = held.token.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            lock.release(&mut a, &token).expect("release")
        })
    };
    let next = lock
        .acquire(&mut b, Duration::from_secs(10))
        .expect("acquired after release");
    assert!(releaser.join().expect("thread"));
    assert!(next.fence > held.fence);
}

#[test]
fn the_guard_releases_on_drop_but_never_someone_elses_lock() {
    let server = support::server();
    let (mut a, mut b) = (server.connection(), server.connection());
    let lock = Lock::new("guard", Duration::from_secs(5)).expect("valid");
    {
        let guard = lock.lock(&mut a, Duration::from_secs(1)).expect("acquire");
        assert_eq!(guard.fence(), 1);
    }
    assert_eq!(get(&mut b, lock.key()), None, "dropped guard released");

    let short = Lock::new("guard", Duration::from_millis(40)).expect("valid");
    let guard = short.lock(&mut a, Duration::from_secs(1)).expect("acquire");
    thread::sleep(Duration::from_millis(70));
    let other = lock.try_acquire(&mut b).expect("expired, free");
    drop(guard); // must not delete `other`'s lock
    assert_eq!(get(&mut b, lock.key()), Some(other.token.clone()));
    assert!(matches!(
        lock.lock(&mut a, Duration::ZERO).map_err(Error::into_kind),
        Err(ErrorKind::LockTimeout { .. })
    ));
}

#[test]
fn async_twins_behave_like_the_sync_api() {
    let server = support::server();
    let rt = support::runtime();
    rt.block_on(async {
        let (mut mux, mut mgr) = support::async_connections(&server).await;
        let lock = Lock::new("async", Duration::from_secs(5)).expect("valid");
        let lease = lock.try_acquire_async(&mut mux).await.expect("free");
        assert!(matches!(
            lock.try_acquire_async(&mut mgr)
                .await
                .map_err(Error::into_kind),
            Err(ErrorKind::LockBusy { .. })
        ));
        assert!(matches!(
            lock.acquire_async(&mut mgr, Duration::from_millis(120))
                .await
                .map_err(Error::into_kind),
            Err(ErrorKind::LockTimeout { .. })
        ));
        assert!(
            !lock
                .release_async(&mut mgr, "intruder")
                .await
                .expect("release")
        );
        assert!(
            lock.extend_async(&mut mux, &lease.token, Duration::from_secs(9))
                .await
                .expect("extend")
        );
        assert!(
            lock.release_async(&mut mux, &lease.token)
                .await
                .expect("release")
        );
        let next = lock
            .acquire_async(&mut mgr, Duration::from_secs(1))
            .await
            .expect("free again");
        assert!(next.fence > lease.fence);
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
        |r: redis_patterns::Result<Lock>, name: &str| match r.as_ref().map_err(Error::kind) {
            Err(ErrorKind::InvalidArgument {
                name: n,
                reason,
                script: None,
            }) => {
                assert_eq!(n, name);
                assert!(!reason.is_empty() && !reason.ends_with('.'));
            }
            other => panic!("expected InvalidInput({name}), got {other:?}"),
        };
    invalid(Lock::new("", Duration::from_secs(1)), "lock name");
    invalid(Lock::new("a{b}", Duration::from_secs(1)), "lock name");
    invalid(
        Lock::with_prefix("p{", "a", Duration::from_secs(1)),
        "prefix",
    );
    invalid(Lock::new("a", Duration::ZERO), "lease");
    invalid(Lock::new("a", Duration::from_micros(999)), "lease");
    invalid(
        Lock::new("a", Duration::from_millis(MAX_LEASE_MS + 1)),
        "lease",
    );
    invalid(
        Lock::new("a", Duration::from_secs(1)).and_then(|l| l.retry_interval(Duration::ZERO)),
        "retry interval",
    );
    let lock = Lock::new("a", Duration::from_secs(1)).expect("valid");
    assert!(matches!(
        lock.release(&mut con, "").map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { name, .. }) if name == "token"
    ));
    assert!(matches!(
        lock.extend(&mut con, "t", Duration::ZERO).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { name, .. }) if name == "lease"
    ));
    assert!(matches!(
        lock.extend(&mut con, "", Duration::from_secs(1)).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { name, .. }) if name == "token"
    ));
    assert!(matches!(
        lock.owned(&mut con, "").map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { name, .. }) if name == "token"
    ));
    assert_eq!(support::dbsize(&mut con), 0, "nothing written");
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut con)
        .expect("INFO");
    assert!(
        !stats.contains("cmdstat_evalsha"),
        "no script was called:\n{stats}"
    );
}
