//! The guards of every leased resource ([`Guard`] sync, [`AsyncGuard`]
//! async) on a semaphore permit and on both sides of a read-write lock,
//! against a real redis-server, through both drivers: built the same way
//! on both, renewed across more than a lease, the loss reported once
//! the lease is taken away behind the guard's back, given back on drop and
//! on release (the lock's own guards are tested in `tests/lock.rs`).

#[path = "support/leased.rs"]
mod leased;
mod support;

use std::thread;
use std::time::{Duration, Instant};

use leased::eventually;
use redis_patterns::lease::{AsyncGuard, Guard, Leasable, LostReason};
use redis_patterns::rwlock::RwLock;
use redis_patterns::semaphore::Semaphore;
use redis_patterns::{AsyncConnection, Connection, ErrorKind, Op, Request};
use support::Driver;

/// What a test needs to know of a resource's keys: whether `token` holds
/// a lease now, and how to take it away behind the guard's back.
struct Keys {
    holds: Probe,
    steal: Action,
}

/// A question about a token's lease, asked through a driver.
type Probe = Box<dyn Fn(&mut Driver, &str) -> bool>;
/// Something done to a token's lease through a driver.
type Action = Box<dyn Fn(&mut Driver, &str)>;

/// A sorted set of leases (a semaphore's permits, the rwlock's readers).
fn zset_keys(key: &str) -> Keys {
    let (k1, k2) = (key.to_string(), key.to_string());
    Keys {
        holds: Box::new(move |d, token| {
            let score: Option<f64> = d.cmd(&k1, redis::cmd("ZSCORE").arg(&k1).arg(token));
            score.is_some()
        }),
        steal: Box::new(move |d, token| {
            let _: i64 = d.cmd(&k2, redis::cmd("ZREM").arg(&k2).arg(token));
        }),
    }
}

/// A string holding its owner's token (the rwlock's writer).
fn string_keys(key: &str) -> Keys {
    let (k1, k2) = (key.to_string(), key.to_string());
    Keys {
        holds: Box::new(move |d, token| {
            let owner: Option<String> = d.cmd(&k1, redis::cmd("GET").arg(&k1));
            owner.as_deref() == Some(token)
        }),
        steal: Box::new(move |d, _| {
            let _: i64 = d.cmd(&k2, redis::cmd("DEL").arg(&k2));
        }),
    }
}

/// One guard of `resource` (lease `lease`) through `d`: held and renewed
/// for 2.5 leases, then its lease taken away: the loss is reported
/// (`LockLost`, `NotOwned`) and release answers `false`; a second guard is
/// dropped, which gives its lease back.
fn guard_lifecycle<R: Leasable>(d: &mut Driver, url: &str, resource: &R, keys: &Keys) {
    // The observer is sync on both drivers: it runs inside the async test.
    let mut other = Driver::Sync(support::connect(url));
    let lease = LEASE;
    let wait = Duration::from_secs(5);
    match d {
        Driver::Sync(con) => {
            let guard = Guard::acquire(resource, con, wait).expect("acquire");
            let token = guard.token().to_string();
            let started = Instant::now();
            while started.elapsed() < lease * 3 / 2 {
                thread::sleep(Duration::from_millis(50)); // the work
                guard.check().expect("held while renewed");
            }
            assert!(
                (keys.holds)(&mut other, &token),
                "still held after 1.5 leases"
            );
            (keys.steal)(&mut other, &token);
            eventually("the loss is reported", || guard.lost().is_some());
            assert_eq!(guard.lost().unwrap().reason, LostReason::NotOwned);
            assert!(matches!(
                guard.check().map_err(|e| e.into_kind()),
                Err(ErrorKind::LockLost { .. })
            ));
            assert_eq!(
                guard.release().unwrap(),
                Some(false),
                "nothing left to give back"
            );
            let token = {
                let guard = Guard::acquire(resource, con, wait).expect("acquire again");
                assert!((keys.holds)(&mut other, guard.token()));
                guard.token().to_string()
            };
            assert!(
                !(keys.holds)(&mut other, &token),
                "a dropped guard gives it back"
            );
        }
        Driver::Async(con, rt) => rt.block_on(async {
            let guard = AsyncGuard::acquire(resource, con, wait)
                .await
                .expect("acquire");
            let token = guard.token().to_string();
            let started = Instant::now();
            while started.elapsed() < lease * 3 / 2 {
                tokio::time::sleep(Duration::from_millis(50)).await; // the work
                guard.check().expect("held while renewed");
            }
            let held = guard.held();
            assert!(
                (keys.holds)(&mut other, &token),
                "still held after 1.5 leases"
            );
            (keys.steal)(&mut other, &token);
            let lost = tokio::time::timeout(Duration::from_secs(30), held.lost_signal())
                .await
                .expect("the loss is reported");
            assert_eq!(lost.reason, LostReason::NotOwned);
            assert_eq!(
                guard.release().await.unwrap(),
                Some(false),
                "nothing left to give back"
            );
            let guard = AsyncGuard::acquire(resource, con, wait)
                .await
                .expect("acquire again");
            let token = guard.token().to_string();
            drop(guard);
            let deadline = Instant::now() + Duration::from_secs(30);
            while (keys.holds)(&mut other, &token) {
                assert!(Instant::now() < deadline, "a dropped guard gives it back");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }),
    }
}

/// Renewed every lease/3, a lease of 2.4 s survives a renewal stalled for
/// up to 1.6 s (a loaded machine).
const LEASE: Duration = Duration::from_millis(2400);

#[test]
fn a_permit_guard_renews_reports_its_loss_and_gives_the_permit_back() {
    let sem = Semaphore::new("guarded", 2, LEASE).expect("valid");
    let keys = zset_keys(sem.key());
    support::on_server_at(|d, url| guard_lifecycle(d, url, &sem, &keys));
}

#[test]
fn read_and_write_guards_renew_report_their_loss_and_give_the_lease_back() {
    let lock = RwLock::new("guarded", LEASE).expect("valid");
    let (readers, writer) = (
        zset_keys(lock.readers_key()),
        string_keys(lock.writer_key()),
    );
    support::on_server_at(|d, url| {
        guard_lifecycle(d, url, &lock.reading(), &readers);
        guard_lifecycle(d, url, &lock.writing(), &writer);
    });
}

/// The guards' aliases name the same types, built the same way sync and
/// async; a writer's guard keeps readers out while it is held.
#[test]
fn guards_are_built_alike_and_a_write_guard_keeps_readers_out() {
    let sem = Semaphore::new("alike", 1, LEASE).expect("valid");
    let lock = RwLock::new("alike", LEASE).expect("valid");
    support::on_server_at(|d, url| {
        let mut other = Driver::Sync(support::connect(url));
        match d {
            Driver::Sync(con) => {
                let busy = |e: &ErrorKind| matches!(e, ErrorKind::NoPermit { .. });
                keeps_out(&sem, con, &mut other, sem.try_acquire(), busy);
                let busy = |e: &ErrorKind| matches!(e, ErrorKind::LockBusy { .. });
                keeps_out(&lock.writing(), con, &mut other, lock.try_read(), busy);
            }
            Driver::Async(con, rt) => rt.block_on(async {
                let busy = |e: &ErrorKind| matches!(e, ErrorKind::NoPermit { .. });
                keeps_out_async(&sem, con, sem.try_acquire(), busy).await;
                let busy = |e: &ErrorKind| matches!(e, ErrorKind::LockBusy { .. });
                keeps_out_async(&lock.writing(), con, lock.try_read(), busy).await;
            }),
        }
    });
}

/// Holds `resource` with a guard on `con` while `attempt` runs on `other`:
/// refused as `busy` says; then the guard gives it back.
fn keeps_out<R: Leasable, T: std::fmt::Debug + Send + 'static>(
    resource: &R,
    con: &mut Connection,
    other: &mut Driver,
    attempt: Op<T>,
    busy: impl Fn(&ErrorKind) -> bool,
) {
    let guard = Guard::acquire(resource, con, Duration::ZERO).expect("held");
    let refused = other.run(attempt).map_err(|e| e.into_kind());
    assert!(matches!(&refused, Err(e) if busy(e)), "{refused:?}");
    assert_eq!(guard.release().expect("release"), Some(true));
}

/// [`keeps_out`] with an async guard, `attempt` on the same connection.
async fn keeps_out_async<R: Leasable, T: std::fmt::Debug + Send + 'static>(
    resource: &R,
    con: &AsyncConnection,
    attempt: Op<T>,
    busy: impl Fn(&ErrorKind) -> bool,
) {
    let guard = AsyncGuard::acquire(resource, con, Duration::ZERO)
        .await
        .expect("held");
    let refused = attempt.run_async(con).await.map_err(|e| e.into_kind());
    assert!(matches!(&refused, Err(e) if busy(e)), "{refused:?}");
    assert_eq!(guard.release().await.expect("release"), Some(true));
}

/// The holder process of [`a_frozen_holder_learns_at_once_that_its_lease_ran_out`]:
/// holds a lock with a 1 s lease, then checks it every 5 ms, printing the
/// time since its previous check and the verdict, until it is lost.
fn frozen_holder(url: &str) {
    use std::io::Write;
    let mut con = redis_patterns::Connection::open(url).expect("connect");
    let lock = redis_patterns::lock::Lock::new("frozen", Duration::from_secs(1)).unwrap();
    let guard = Guard::acquire(&lock, &mut con, Duration::from_secs(5)).expect("acquire");
    let mut out = std::io::stdout();
    writeln!(out, "held {}", guard.fence()).unwrap();
    let mut last = Instant::now();
    loop {
        let gap = last.elapsed();
        last = Instant::now();
        let verdict = match guard.lost() {
            None => "ok".to_string(),
            Some(lost) => format!("lost {:?}", lost.reason),
        };
        writeln!(out, "check {} {verdict}", gap.as_millis()).unwrap();
        out.flush().unwrap();
        if verdict != "ok" {
            assert!(guard.check().is_err(), "check agrees with lost");
            return;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// A holder frozen (`SIGSTOP`) for 3 s with a 1 s lease: its first check
/// after it resumes reports the lease lost, before any renewal could tell
/// it (the reason is the deadline's `Expired`, unless the renewal thread
/// happened to learn `NotOwned` first); before the freeze every check was
/// `Ok`. The holder is this test binary run again as a child process.
#[test]
fn a_frozen_holder_learns_at_once_that_its_lease_ran_out() {
    use std::io::BufRead;
    const HOLDER: &str = "REDIS_PATTERNS_FROZEN_HOLDER_URL";
    if let Ok(url) = std::env::var(HOLDER) {
        return frozen_holder(&url);
    }
    let server = support::server();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_frozen_holder_learns_at_once_that_its_lease_ran_out",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLDER, server.url())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the holder process");
    let pid = child.id().to_string();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut checks = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.starts_with("check ") {
            checks.push(line);
            if checks.len() == 20 {
                break;
            }
        }
    }
    let signal = |s: &str| {
        let ok = std::process::Command::new("kill")
            .args([s, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {s} {pid}");
    };
    signal("-STOP");
    thread::sleep(Duration::from_secs(3));
    signal("-CONT");
    let rest: Vec<String> = lines
        .map(|l| l.unwrap())
        .filter(|l| l.starts_with("check "))
        .collect();
    assert!(child.wait().unwrap().success(), "the holder ended cleanly");
    let gap_and_verdict = |l: &str| -> (u64, String) {
        let mut w = l.splitn(3, ' ').skip(1);
        (
            w.next().unwrap().parse().unwrap(),
            w.next().unwrap().to_string(),
        )
    };
    assert!(
        checks.iter().all(|l| gap_and_verdict(l).1 == "ok"),
        "held before the freeze: {checks:?}"
    );
    let frozen = rest
        .iter()
        .position(|l| gap_and_verdict(l).0 >= 1000)
        .unwrap_or_else(|| panic!("a check spans the freeze: {rest:?}"));
    let (gap, verdict) = gap_and_verdict(&rest[frozen]);
    println!("first check after the freeze ({gap} ms since the one before): {verdict}");
    assert!(
        verdict.starts_with("lost"),
        "the first check after the freeze knows the lease ran out: {:?}",
        &rest[frozen..]
    );
}

/// The scoped form is the same on both drivers: `Guard::hold` (sync) and
/// `AsyncGuard::hold` run the work while the lease is held and give it
/// back afterwards.
#[test]
fn hold_runs_the_work_under_the_lease_and_gives_it_back_on_both_drivers() {
    let sem = Semaphore::new("held", 1, LEASE).expect("valid");
    let keys = zset_keys(sem.key());
    support::on_server_at(|d, url| {
        let mut other = Driver::Sync(support::connect(url));
        let wait = Duration::from_secs(5);
        let token = match d {
            Driver::Sync(con) => Guard::hold(&sem, con, wait, |g| {
                assert!((keys.holds)(&mut other, g.token()), "held while it runs");
                g.token().to_string()
            }),
            Driver::Async(con, rt) => rt.block_on(AsyncGuard::hold(&sem, con, wait, |h| {
                assert!((keys.holds)(&mut other, h.token()), "held while it runs");
                let token = h.token().to_string();
                async move { token }
            })),
        }
        .expect("held");
        assert!(!(keys.holds)(&mut other, &token), "given back afterwards");
    });
}
