//! The contended case of `cargo bench --bench lock`: 16 waiters on one lock,
//! each taking it, letting go and coming back. Acquire scripts per
//! acquisition (`INFO commandstats`: every script call minus the releases),
//! the handoff latency (the holder's release sent -> the next holder's
//! acquire returns) against the floor measured in the same run, and, in fair
//! mode, whether the lock goes to 16 waiters that arrived one after another
//! in their order of arrival.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::lock::Lock;
use redis_patterns::{AsyncConnection, Connection, Request};

use crate::common::{Table, num, quantile};

/// Waiters on the one lock.
pub const WAITERS: usize = 16;

/// Script calls the server counted (EVALSHA, FCALL and their _RO forms).
fn script_calls(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(con)
        .expect("INFO");
    ["evalsha", "evalsha_ro", "fcall", "fcall_ro"]
        .iter()
        .filter_map(|name| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
                .and_then(|r| r.split(',').next())
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

/// What one contended run measured.
pub struct Run {
    pub acquisitions: usize,
    pub scripts_per_acquisition: f64,
    pub handoffs_ms: Vec<f64>,
}

/// The time the last release was sent, shared by the waiters.
type Released = Arc<Mutex<Option<Instant>>>;

fn handoff(released: &Released) -> Option<f64> {
    released
        .lock()
        .expect("released")
        .take()
        .map(|t| t.elapsed().as_secs_f64() * 1000.0)
}

/// `rounds` acquisitions per waiter, sync (a thread and a Connection each)
/// or async (a task each on clones of one AsyncConnection).
pub fn run(
    url: &str,
    admin: &mut redis::Connection,
    lock: &Lock,
    rounds: usize,
    sync: bool,
) -> Run {
    let before = script_calls(admin);
    let released: Released = Arc::default();
    let handoffs = Arc::new(Mutex::new(Vec::new()));
    if sync {
        let workers: Vec<_> = (0..WAITERS)
            .map(|_| {
                let (lock, url) = (lock.clone(), url.to_string());
                let (released, handoffs) = (Arc::clone(&released), Arc::clone(&handoffs));
                thread::spawn(move || {
                    let mut con = Connection::open(url).expect("connect");
                    for _ in 0..rounds {
                        let lease = lock
                            .acquire(Duration::from_secs(600))
                            .run(&mut con)
                            .expect("acquire");
                        if let Some(ms) = handoff(&released) {
                            handoffs.lock().expect("handoffs").push(ms);
                        }
                        *released.lock().expect("released") = Some(Instant::now());
                        lock.release(&lease.token).run(&mut con).expect("release");
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("waiter");
        }
    } else {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let con = AsyncConnection::open(url).await.expect("connect");
            let tasks: Vec<_> = (0..WAITERS)
                .map(|_| {
                    let (lock, con) = (lock.clone(), con.clone());
                    let (released, handoffs) = (Arc::clone(&released), Arc::clone(&handoffs));
                    tokio::spawn(async move {
                        for _ in 0..rounds {
                            let lease = lock
                                .acquire(Duration::from_secs(600))
                                .run_async(&con)
                                .await
                                .expect("acquire");
                            if let Some(ms) = handoff(&released) {
                                handoffs.lock().expect("handoffs").push(ms);
                            }
                            *released.lock().expect("released") = Some(Instant::now());
                            lock.release(&lease.token)
                                .run_async(&con)
                                .await
                                .expect("release");
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("waiter");
            }
        });
    }
    let acquisitions = WAITERS * rounds;
    let scripts = script_calls(admin) - before - acquisitions as u64;
    let handoffs_ms = std::mem::take(&mut *handoffs.lock().expect("handoffs"));
    Run {
        acquisitions,
        scripts_per_acquisition: scripts as f64 / acquisitions as f64,
        handoffs_ms,
    }
}

/// A fair lock held while 16 waiters arrive one after another (each queued
/// before the next starts), then let go: how many got it in their place of
/// arrival.
pub fn fair_order(url: &str, admin: &mut redis::Connection, lock: &Lock) -> usize {
    let mut holder = Connection::open(url).expect("connect");
    let held = lock.try_acquire().run(&mut holder).expect("free");
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..WAITERS {
        let (mine, url, got) = (lock.clone(), url.to_string(), Arc::clone(&got));
        waiters.push(thread::spawn(move || {
            let mut con = Connection::open(url).expect("connect");
            let lease = mine
                .acquire(Duration::from_secs(600))
                .run(&mut con)
                .expect("acquire");
            got.lock().expect("order").push(i);
            mine.release(&lease.token).run(&mut con).expect("release");
        }));
        loop {
            let n: usize = redis::cmd("ZCARD")
                .arg(lock.queue_key())
                .query(admin)
                .expect("ZCARD");
            if n > i {
                break;
            }
            thread::sleep(Duration::from_millis(1));
        }
    }
    lock.release(&held.token).run(&mut holder).expect("release");
    for w in waiters {
        w.join().expect("waiter");
    }
    let order = got.lock().expect("order").clone();
    order.iter().enumerate().filter(|(at, i)| at == *i).count()
}

/// Prints the contended table: each run's rows, then the floor's.
pub fn print(runs: &mut [(&str, Run)], floor: &mut [f64], in_order: usize) {
    let mut t = Table::new(
        &format!(
            "Contended: {WAITERS} waiters on one lock, each taking it again after its release"
        ),
        &[
            "mode",
            "acquisitions",
            "acquire scripts / acquisition",
            "handoff p50 ms",
            "handoff p99 ms",
            "p50 / floor p50",
            "p99 / floor p99",
        ],
    );
    let (f50, f99) = (quantile(floor, 0.5), quantile(floor, 0.99));
    for (name, run) in runs.iter_mut() {
        let (p50, p99) = (
            quantile(&mut run.handoffs_ms, 0.5),
            quantile(&mut run.handoffs_ms, 0.99),
        );
        t.row(vec![
            name.to_string(),
            run.acquisitions.to_string(),
            format!("{:.2}", run.scripts_per_acquisition),
            num(p50),
            num(p99),
            format!("{:.1}x", p50 / f50),
            format!("{:.1}x", p99 / f99),
        ]);
    }
    t.row(vec![
        "floor: raw SPUBLISH wakes SSUBSCRIBE, then one PING".into(),
        floor.len().to_string(),
        "-".into(),
        num(f50),
        num(f99),
        "1.0x".into(),
        "1.0x".into(),
    ]);
    t.print();
    println!(
        "fair mode: {in_order} of {WAITERS} waiters that arrived one after another got the lock in their order of arrival"
    );
}
