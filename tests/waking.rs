//! Waiters woken one at a time (`lua/lock`, `lua/semaphore`, `lua/rwlock`,
//! the queue of `lua/includes/queue.lua`): 16 waiters on one lock, or 8
//! readers and 8 writers on one read-write lock, cost at most two acquire
//! scripts per acquisition once they run (the refused attempt and the one
//! its wake-up makes; `INFO commandstats` counts the scripts), a fair lock
//! and a fair semaphore go to their waiters in arrival order, and a waiter
//! that gives up or disappears leaves the queue. No timing: every assertion
//! is about counts, order and keys.

mod support;

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::lease::Leasable;
use redis_patterns::lock::Lock;
use redis_patterns::prelude::*;
use redis_patterns::rwlock::{Role, RwLock};
use redis_patterns::semaphore::Semaphore;
use redis_patterns::{Connection, ErrorKind};
use redis_patterns_test_support::{LocalServer, script_calls};

const WAITERS: usize = 16;
const ROUNDS: usize = 5;

/// Blocks until the queue `key` holds `n` waiters (each arrives with a
/// refused attempt, so the next one arrives after it).
fn until_queued(con: &mut redis::Connection, key: &str, n: usize) {
    loop {
        let len: usize = redis::cmd("ZCARD").arg(key).query(con).expect("ZCARD");
        if len >= n {
            return;
        }
        thread::sleep(Duration::from_millis(2));
    }
}

fn connect(url: &str) -> Connection {
    support::connect(url)
}

/// A fair lock named `key` with a lease of a minute.
fn fair_lock(key: &str) -> Lock {
    Lock::builder(key)
        .lease(Duration::from_secs(60))
        .fair(true)
        .build()
        .expect("valid")
}

/// Lets `WAITERS` workers on `server`, each on its own connection, run
/// `round(i, con)` `ROUNDS` times (worker `i`; each round one acquisition
/// and its release, so that the waiters contend), and checks that the
/// acquisitions cost at most two acquire scripts each. The rounds of
/// workers 0 and 1 run once first, outside the count, to load every script
/// they call.
fn at_most_two_acquire_scripts_per_acquisition(
    server: &LocalServer,
    round: impl Fn(usize, &mut Connection) + Send + Sync + 'static,
) {
    let (url, mut admin) = (server.url(), server.connection());
    let mut con = connect(&url);
    for i in 0..2 {
        round(i, &mut con);
    }
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut admin)
        .unwrap();
    let before = script_calls(&mut admin);
    let round = Arc::new(round);
    let workers: Vec<_> = (0..WAITERS)
        .map(|i| {
            let (round, url) = (Arc::clone(&round), url.clone());
            thread::spawn(move || {
                let mut con = connect(&url);
                for _ in 0..ROUNDS {
                    round(i, &mut con);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let acquisitions = (WAITERS * ROUNDS) as u64;
    // CONFIG RESETSTAT and INFO are no scripts; every release is one.
    let acquires = script_calls(&mut admin) - before - acquisitions;
    // Each waiter's first acquire does not know the lock is busy: its refused
    // attempt is followed by one more after subscribing. From then on a
    // waiter subscribes first: refused once, woken once (a reader that finds
    // only readers in needs one).
    assert!(
        acquires <= 2 * acquisitions + WAITERS as u64,
        "{acquires} acquire scripts for {acquisitions} acquisitions"
    );
    assert!(
        acquires >= acquisitions,
        "every acquisition runs the script"
    );
}

#[test]
fn sixteen_waiters_on_a_fair_lock_cost_at_most_two_acquire_scripts_per_acquisition() {
    let server = support::server();
    let lock = fair_lock("hot");
    let (contended, inside) = (lock.clone(), Mutex::new(0usize));
    at_most_two_acquire_scripts_per_acquisition(&server, move |_, con| {
        let lease = contended
            .acquire(Duration::from_secs(120))
            .run(con)
            .unwrap();
        {
            let mut n = inside.lock().unwrap();
            *n += 1;
            assert_eq!(*n, 1, "one holder at a time");
        }
        *inside.lock().unwrap() -= 1;
        assert_eq!(
            contended.release(&lease.token).run(con).unwrap(),
            Some(true)
        );
    });
    let queued: usize = redis::cmd("ZCARD")
        .arg(lock.queue_key())
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(queued, 0, "every waiter left the queue");
}

/// Who holds the read-write lock in the test: readers (> 0) or a writer
/// (-1).
fn enter(inside: &Mutex<i64>, role: Role) {
    let mut n = inside.lock().unwrap();
    match role {
        Role::Read => {
            assert!(*n >= 0, "no reader while a writer holds it");
            *n += 1;
        }
        Role::Write => {
            assert_eq!(*n, 0, "a writer alone");
            *n = -1;
        }
    }
}

fn leave(inside: &Mutex<i64>, role: Role) {
    let mut n = inside.lock().unwrap();
    *n = if role == Role::Read { *n - 1 } else { 0 };
}

#[test]
fn eight_readers_and_eight_writers_on_a_fair_rwlock_cost_at_most_two_acquire_scripts_per_acquisition()
 {
    let server = support::server();
    let lock = RwLock::builder("hot")
        .lease(Duration::from_secs(60))
        .fair(true)
        .build()
        .expect("valid");
    let (contended, inside) = (lock.clone(), Mutex::new(0i64));
    at_most_two_acquire_scripts_per_acquisition(&server, move |i, con| {
        let role = if i % 2 == 0 { Role::Write } else { Role::Read };
        let timeout = Duration::from_secs(120);
        let acquire = match role {
            Role::Read => contended.read(timeout),
            Role::Write => contended.write(timeout),
        };
        let lease = acquire.run(con).unwrap();
        enter(&inside, role);
        leave(&inside, role);
        assert_eq!(contended.release(&lease).run(con).unwrap(), Some(true));
    });
    let mut admin = server.connection();
    for key in [lock.queue_key(), lock.places_key(), lock.intents_key()] {
        let n: usize = redis::cmd("ZCARD").arg(key).query(&mut admin).unwrap();
        assert_eq!(n, 0, "{key}: every waiter left the queue");
    }
}

/// Takes `resource` (`first`: its `try_acquire`, on a fresh server),
/// lets `WAITERS` waiters arrive one after another on its queue
/// `queue_key`, then lets go: they get it in the order they arrived.
fn order_of_arrival_kept<R: Leasable>(
    resource: &R,
    queue_key: &str,
    first: impl FnOnce(&mut Connection) -> R::Lease,
) {
    let server = support::server();
    let mut admin = server.connection();
    let mut con = connect(&server.url());
    let held = first(&mut con);
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for i in 0..WAITERS {
        let (resource, got, url) = (resource.clone(), Arc::clone(&got), server.url());
        workers.push(thread::spawn(move || {
            let mut con = connect(&url);
            let lease = resource
                .acquire(Duration::from_secs(120))
                .run(&mut con)
                .unwrap();
            got.lock().unwrap().push(i);
            assert_eq!(resource.release(&lease).run(&mut con).unwrap(), Some(true));
        }));
        until_queued(&mut admin, queue_key, i + 1);
    }
    assert_eq!(resource.release(&held).run(&mut con).unwrap(), Some(true));
    for w in workers {
        w.join().expect("waiter");
    }
    let order = got.lock().unwrap().clone();
    assert_eq!(order, (0..WAITERS).collect::<Vec<_>>(), "arrival order");
}

#[test]
fn a_fair_lock_goes_to_its_waiters_in_arrival_order() {
    let lock = fair_lock("fifo");
    let first = |con: &mut Connection| lock.try_acquire().run(con).unwrap();
    order_of_arrival_kept(&lock, lock.queue_key(), first);
}

#[test]
fn a_fair_semaphore_gives_its_permits_in_arrival_order() {
    let sem = Semaphore::builder("fifo", 1)
        .lease(Duration::from_secs(60))
        .fair(true)
        .build()
        .expect("valid");
    let first = |con: &mut Connection| sem.try_acquire().run(con).unwrap();
    order_of_arrival_kept(&sem, sem.queue_key(), first);
}

#[test]
fn a_waiter_that_times_out_or_disappears_leaves_the_queue() {
    let server = support::server();
    let mut admin = server.connection();
    let lock = fair_lock("leave");
    let mut con = connect(&server.url());
    let held = lock.try_acquire().run(&mut con).unwrap();
    // A single attempt takes no place.
    let mut other = connect(&server.url());
    assert!(matches!(
        lock.try_acquire()
            .run(&mut other)
            .map_err(|e| e.into_kind()),
        Err(ErrorKind::LockBusy { .. })
    ));
    let card = |admin: &mut redis::Connection| -> usize {
        redis::cmd("ZCARD")
            .arg(lock.queue_key())
            .query(admin)
            .unwrap()
    };
    assert_eq!(card(&mut admin), 0);
    // A waiter that times out gives its place up.
    let err = lock
        .acquire(Duration::from_millis(20))
        .run(&mut other)
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::LockTimeout { .. }));
    assert_eq!(card(&mut admin), 0, "the timed-out waiter left");
    assert_eq!(lock.release(&held.token).run(&mut con).unwrap(), Some(true));
    // A waiter that disappeared (its place ended: here, a place that was
    // never renewed, as a crashed client leaves it) is skipped: the free
    // fair lock goes to the next caller, and the dead waiter is dropped.
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(lock.queue_key())
        .arg(1)
        .arg("crashed")
        .cmd("ZADD")
        .arg(lock.places_key())
        .arg(1)
        .arg("crashed")
        .query(&mut admin)
        .unwrap();
    assert_eq!(card(&mut admin), 1);
    let next = lock
        .try_acquire()
        .run(&mut other)
        .expect("the dead waiter is skipped");
    assert_eq!(card(&mut admin), 0, "the dead waiter was dropped");
    lock.release(&next.token).run(&mut other).unwrap();
}
