//! `cargo bench --bench lock`: wrapper overhead, lock throughput and the time
//! a waiter needs to get a released lock. Starts its own redis-server.
//!
//! Environment: `BENCH_ROUNDS` (default 5), `BENCH_CALLS` calls per round
//! (default 20000), `BENCH_WAITS` samples of the wait latency (default 100).

mod common;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{Table, num, paired, quantile, rate};
use redis_patterns::lock::Lock;
use redis_patterns::{Batch, Connection, Request, scripts};

fn main() {
    let server = common::server(&[]);
    let mut con = server.connection();
    common::load_scripts(&server);
    let mut ours = (
        server.connection(),
        Connection::open(server.url()).expect("connect"),
    );
    let calls = common::env_or("BENCH_CALLS", 20_000);
    println!(
        "redis-server on 127.0.0.1:{}; median of {} rounds (BENCH_ROUNDS); {calls} calls a round",
        server.port(),
        common::rounds()
    );

    // --- Wrapper overhead: the same script, the same arguments -----------------
    // lock.release with a token that does not own the (absent) lock: a GET and
    // a compare, no write, so every call does identical work.
    let (key, token) = ("bench:{lock}", "not-the-owner");
    let sha = scripts::LOCK_RELEASE.sha1;
    let (raw, wrapped, unpiped) = paired(
        calls,
        &mut ours,
        |(con, _)| {
            for _ in 0..calls {
                let v: i64 = redis::cmd("EVALSHA")
                    .arg(sha)
                    .arg(1)
                    .arg(key)
                    .arg(token)
                    .query(con)
                    .expect("raw EVALSHA");
                assert_eq!(v, 0);
            }
        },
        |(_, con)| {
            for _ in 0..calls {
                let v = scripts::lock::release(key, token, "bench:{lock}:wake")
                    .run(con)
                    .expect("wrapper");
                assert_eq!(v, 0);
            }
        },
    );
    let depth = 16;
    let batches = calls / depth;
    let (raw_pipe, wrapped_pipe, piped) = paired(
        batches * depth,
        &mut ours,
        |(con, _)| {
            for _ in 0..batches {
                let mut pipe = redis::pipe();
                for _ in 0..depth {
                    pipe.cmd("EVALSHA").arg(sha).arg(1).arg(key).arg(token);
                }
                let v: Vec<i64> = pipe.query(con).expect("raw pipeline");
                assert_eq!(v.len(), depth);
            }
        },
        |(_, con)| {
            for _ in 0..batches {
                let mut batch = Batch::new();
                for _ in 0..depth {
                    batch.script(scripts::lock::release(key, token, "bench:{lock}:wake"));
                }
                let v: Vec<i64> = batch
                    .run(con)
                    .expect("wrapper batch")
                    .all()
                    .expect("replies");
                assert_eq!(v.len(), depth);
            }
        },
    );
    let mut t = Table::new(
        "Wrapper overhead (lock.release, no-op path): calls/s",
        &[
            "mode",
            "raw EVALSHA (redis-rs)",
            "generated wrapper",
            "wrapper / raw (median of rounds)",
        ],
    );
    t.row(vec![
        "unpipelined".into(),
        num(raw),
        num(wrapped),
        format!("{unpiped:.3}x"),
    ]);
    t.row(vec![
        format!("pipelined, depth {depth}"),
        num(raw_pipe),
        num(wrapped_pipe),
        format!("{piped:.3}x"),
    ]);
    t.print();

    // --- Lock throughput: acquire + release pairs for one client ---------------
    // The floor: SET NX PX, then a compare-and-delete EVALSHA — the two round
    // trips any correct owner-token lock needs, issued directly.
    let pairs = calls / 2;
    let lock = Lock::new("bench-pairs", Duration::from_secs(10)).expect("valid lock");
    let floor_key = "bench:{floor}";
    let (floor, ours_rate, lock_ratio) = paired(
        pairs,
        &mut ours,
        |(con, _)| {
            for i in 0..pairs {
                let token = format!("{i:032x}");
                let ok: Option<String> = redis::cmd("SET")
                    .arg(floor_key)
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(10_000)
                    .query(con)
                    .expect("SET NX PX");
                assert!(ok.is_some());
                let v: i64 = redis::cmd("EVALSHA")
                    .arg(sha)
                    .arg(1)
                    .arg(floor_key)
                    .arg(&token)
                    .query(con)
                    .expect("CAD");
                assert_eq!(v, 1);
            }
        },
        |(_, con)| {
            for _ in 0..pairs {
                let lease = lock.try_acquire().run(con).expect("free lock");
                assert!(lock.release(&lease.token).run(con).expect("release"));
            }
        },
    );
    let mut t = Table::new(
        "Lock: acquire + release pairs/s, one client",
        &[
            "SET NX PX + compare-and-delete (floor)",
            "Lock::try_acquire + release",
            "ours / floor (median of rounds)",
        ],
    );
    t.row(vec![
        num(floor),
        num(ours_rate),
        format!("{lock_ratio:.3}x"),
    ]);
    t.print();

    // --- Wait latency: release -> waiter holds the lock ------------------------
    let samples = common::env_or("BENCH_WAITS", 100);
    let lock = Lock::new("bench-wait", Duration::from_secs(10)).expect("valid lock");
    let mut waits = Vec::with_capacity(samples);
    let mut holder = Connection::open(server.url()).expect("connect");
    for i in 0..samples {
        let held = lock.try_acquire().run(&mut holder).expect("free lock");
        let (tx, rx) = mpsc::channel::<()>();
        let waiter = {
            let lock = lock.clone();
            let mut con = Connection::open(server.url()).expect("connect");
            thread::spawn(move || {
                tx.send(()).expect("signal start");
                let lease = lock
                    .acquire(Duration::from_secs(10))
                    .run(&mut con)
                    .expect("acquire");
                let got = Instant::now();
                assert!(lock.release(&lease.token).run(&mut con).expect("release"));
                got
            })
        };
        rx.recv().expect("waiter started");
        // Hold for a varying while so the release falls anywhere in the
        // waiter's retry cycle.
        thread::sleep(Duration::from_millis(20 + (i as u64 * 37) % 60));
        let released = Instant::now();
        assert!(lock.release(&held.token).run(&mut holder).expect("release"));
        let got = waiter.join().expect("waiter");
        waits.push(got.duration_since(released).as_secs_f64() * 1000.0);
    }
    let rtt = {
        let n = 2000;
        let per_s = rate(n, || {
            for _ in 0..n {
                let _: String = redis::cmd("PING").query(&mut con).expect("PING");
            }
        });
        1000.0 / per_s
    };
    let mut t = Table::new(
        &format!(
            "Wait latency: release -> waiter holds the lock (default 50 ms retry with jitter, {samples} samples)"
        ),
        &[
            "p50 ms",
            "p99 ms",
            "max ms",
            "one round trip ms (PING)",
            "p50 / round trip",
        ],
    );
    let p50 = quantile(&mut waits, 0.5);
    t.row(vec![
        num(p50),
        num(quantile(&mut waits, 0.99)),
        num(quantile(&mut waits, 1.0)),
        num(rtt),
        format!("{:.0}x", p50 / rtt),
    ]);
    t.print();
}
