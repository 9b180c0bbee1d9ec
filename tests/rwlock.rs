//! The read-write lock against a real redis-server and a real three-node
//! cluster, every test body through both drivers.

#[path = "support/leased.rs"]
mod leased;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use leased::{assert_invalid, assert_no_script_call, eventually, waiter};
use redis_patterns::ErrorKind;
use redis_patterns::rwlock::{Role, RwLock};
use support::Driver;

/// 8 threads, each alternating reads and writes: in-process counts (taken
/// between acquire and release, inside the holds on the server) never see
/// a writer with a reader or two writers; readers do share.
fn exclusive_writers(d: &mut Driver, url: &str) {
    /// Holders at the moment, and what the threads saw.
    #[derive(Default)]
    struct Holds {
        readers: AtomicUsize,
        writers: AtomicUsize,
        shared: AtomicUsize,
        violations: AtomicUsize,
    }
    let lock = RwLock::new("doc", Duration::from_secs(10)).expect("valid");
    let holds = Arc::new(Holds::default());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (lock, mut d, holds) = (lock.clone(), d.another(url), holds.clone());
            thread::spawn(move || {
                for i in 0..60 {
                    let write = (i + t) % 4 == 0;
                    let lease = if write {
                        d.run(lock.write(Duration::from_secs(60))).expect("write")
                    } else {
                        d.run(lock.read(Duration::from_secs(60))).expect("read")
                    };
                    if write {
                        let w = holds.writers.fetch_add(1, Ordering::SeqCst) + 1;
                        if w != 1 || holds.readers.load(Ordering::SeqCst) != 0 {
                            holds.violations.fetch_add(1, Ordering::SeqCst);
                        }
                        thread::sleep(Duration::from_millis(1));
                        holds.writers.fetch_sub(1, Ordering::SeqCst);
                    } else {
                        let r = holds.readers.fetch_add(1, Ordering::SeqCst) + 1;
                        if r > 1 {
                            holds.shared.fetch_add(1, Ordering::SeqCst);
                        }
                        if holds.writers.load(Ordering::SeqCst) != 0 {
                            holds.violations.fetch_add(1, Ordering::SeqCst);
                        }
                        thread::sleep(Duration::from_millis(2));
                        holds.readers.fetch_sub(1, Ordering::SeqCst);
                    }
                    assert_eq!(
                        d.run(lock.release(&lease)).expect("release"),
                        Some(true),
                        "held it"
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    assert_eq!(holds.violations.load(Ordering::SeqCst), 0, "{}", d.name());
    assert!(
        holds.shared.load(Ordering::SeqCst) > 0,
        "readers shared the lock"
    );
}

support::server_and_cluster_tests!(
    exclusive_writers:
    never_a_writer_with_a_reader_or_two_writers,
    never_a_writer_with_a_reader_or_two_writers_on_a_real_cluster
);

/// Four readers keep overlapping (each re-reads as soon as it released), so
/// the lock is never free of readers; a waiting writer still gets in, and
/// the readers go on after it.
fn writer_is_not_starved(d: &mut Driver, url: &str) {
    let lock = RwLock::new("feed", Duration::from_secs(10)).expect("valid");
    let stop = Arc::new(AtomicBool::new(false));
    let writer_done = Arc::new(AtomicBool::new(false));
    let (before, after) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (lock, mut d) = (lock.clone(), d.another(url));
            let (stop, writer_done, before, after) = (
                stop.clone(),
                writer_done.clone(),
                before.clone(),
                after.clone(),
            );
            thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let lease = d.run(lock.read(Duration::from_secs(60))).expect("read");
                    if writer_done.load(Ordering::SeqCst) {
                        &after
                    } else {
                        &before
                    }
                    .fetch_add(1, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(20));
                    d.run(lock.release(&lease)).expect("release");
                }
            })
        })
        .collect();
    eventually("readers overlap", || before.load(Ordering::SeqCst) >= 20);
    let lease = d
        .run(lock.write(Duration::from_secs(30)))
        .expect("the writer gets in while readers keep arriving");
    assert_eq!(lease.role, Role::Write);
    let readers_now: i64 = d.cmd(
        lock.readers_key(),
        redis::cmd("ZCARD").arg(lock.readers_key()),
    );
    assert_eq!(readers_now, 0, "alone while it writes");
    assert_eq!(d.run(lock.release(&lease)).unwrap(), Some(true));
    writer_done.store(true, Ordering::SeqCst);
    eventually("readers go on after the writer", || {
        after.load(Ordering::SeqCst) >= 4
    });
    stop.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().expect("reader");
    }
}

#[test]
fn a_waiting_writer_gets_in_while_readers_keep_arriving() {
    support::on_server_and_cluster_at(writer_is_not_starved);
}

#[test]
fn a_writers_release_wakes_a_waiting_reader() {
    support::on_server_at(|d, url| {
        // A 600 s lease and a 120 s deadline: only the message hands it over.
        let lock = RwLock::new("woken", Duration::from_secs(600)).expect("valid");
        let write = d.run(lock.try_write()).expect("free");
        let reader = waiter(d, url, lock.read(Duration::from_secs(120)), lock.channel());
        thread::sleep(Duration::from_millis(100));
        assert_eq!(d.run(lock.release(&write)).unwrap(), Some(true));
        let read = reader
            .join()
            .unwrap()
            .expect("woken by the writer's release");
        assert_eq!(read.role, Role::Read);
    });
}

#[test]
fn crashed_holders_and_writers_that_give_up_free_the_lock() {
    support::on_server(|d| {
        let lock = RwLock::new("crash", Duration::from_millis(400)).expect("valid");
        // A reader that crashes: a writer gets in at the end of its lease.
        d.run(lock.try_read()).expect("free");
        let w = d
            .run(lock.write(Duration::from_secs(30)))
            .expect("after the reader's lease");
        assert_eq!(d.run(lock.release(&w)).unwrap(), Some(true));

        let long = RwLock::new("giveup", Duration::from_secs(30)).expect("valid");
        let r = d.run(long.try_read()).expect("free");
        // A writer that gives up withdraws its intent: readers are not held back.
        assert!(matches!(
            d.run(long.write(Duration::from_millis(100)))
                .map_err(|e| e.into_kind()),
            Err(ErrorKind::LockTimeout { .. })
        ));
        let intents: i64 = d.cmd(
            long.intents_key(),
            redis::cmd("ZCARD").arg(long.intents_key()),
        );
        assert_eq!(intents, 0, "withdrawn");
        let r2 = d.run(long.try_read()).expect("a new reader is let in");
        // A single write attempt neither waits nor stays in line.
        assert!(d.run(long.try_write()).unwrap_err().is_busy());
        let r3 = d.run(long.try_read()).expect("still let in");
        for l in [r, r2, r3] {
            assert_eq!(d.run(long.release(&l)).unwrap(), Some(true));
        }
    });
}

#[test]
fn leases_renew_retry_and_release_per_holder() {
    support::on_server(|d| {
        let lock = RwLock::new("ops", Duration::from_secs(30)).expect("valid");
        let token = "reader-retry";
        let read = d.run(lock.try_as(Role::Read, token)).unwrap();
        assert_eq!(
            d.run(lock.try_as(Role::Read, token)).unwrap(),
            read,
            "a retry keeps it"
        );
        assert!(d.run(lock.extend(&read, Duration::from_secs(300))).unwrap());
        let other = d.run(lock.try_read()).expect("readers share");
        assert!(d.run(lock.try_write()).unwrap_err().is_busy());
        assert_eq!(d.run(lock.release(&read)).unwrap(), Some(true));
        assert_eq!(
            d.run(lock.release(&read)).unwrap(),
            Some(false),
            "nothing left"
        );
        assert_eq!(d.run(lock.release(&other)).unwrap(), Some(true));
        let write = d.run(lock.try_as(Role::Write, "writer-retry")).unwrap();
        assert_eq!(
            d.run(lock.try_as(Role::Write, "writer-retry")).unwrap(),
            write
        );
        assert!(d.run(lock.try_read()).unwrap_err().is_busy());
        assert!(
            d.run(lock.extend(&write, Duration::from_secs(300)))
                .unwrap()
        );
        let pttl: i64 = d.cmd(lock.writer_key(), redis::cmd("PTTL").arg(lock.writer_key()));
        assert!(pttl > 30_000, "{pttl}");
        assert!(!d.run(lock.extend(&read, Duration::from_secs(1))).unwrap());
        assert_eq!(d.run(lock.release(&write)).unwrap(), Some(true));
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let server = support::server();
    assert_no_script_call(&server, || {
        for (r, name) in [
            (RwLock::new("", Duration::from_secs(1)), "lock name"),
            (RwLock::new("a}", Duration::from_secs(1)), "lock name"),
            (RwLock::new("a", Duration::ZERO), "lease"),
        ] {
            assert_invalid(r, name);
        }
        let lock = RwLock::new("a", Duration::from_secs(1)).unwrap();
        assert!(lock.writer_key().starts_with(RwLock::DEFAULT_PREFIX));
        support::each_driver(&server, |d| {
            assert!(
                d.run(lock.try_as(Role::Write, ""))
                    .unwrap_err()
                    .is_invalid_input()
            );
            assert!(
                d.run(lock.wait_as(Role::Read, "", Duration::ZERO))
                    .unwrap_err()
                    .is_invalid_input()
            );
        });
    });
}
