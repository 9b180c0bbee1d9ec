//! `cargo bench --bench lock`: wrapper overhead; lock and semaphore
//! throughput against the two-round-trip floor, and where a pair's time
//! goes (the client's and the server's time on a CPU and queued for one,
//! from Linux's schedstat); the handoff latency (release
//! → the waiter holds the lock) of woken waiters (sync and async) and of the
//! old polling, against one round trip; and the contended case (16 waiters
//! on one lock, fair and not, sync and async; 8 readers + 8 writers on one
//! read-write lock): acquire scripts per acquisition (each waiter's first
//! apart from the steady state, which the goal of 2 is measured on), the
//! handoff p50/p99 against PING and the raw pub/sub floor of the same run,
//! and the fair order of arrival, which fails the bench when not kept (see
//! `benches/lock/contended.rs`). Starts its own redis-server; prints the
//! load average.
//!
//! Environment: `BENCH_ROUNDS` (default 5), `BENCH_CALLS` calls per round
//! (default 20000), `BENCH_WAITS` handoffs per mode (default 200; the
//! polling mode takes a tenth of them, each costs up to its 50 ms interval),
//! `BENCH_CONTENDED_ROUNDS` acquisitions per contended waiter (default 20,
//! at least 2). A modest run on a busy machine (a few minutes):
//! `BENCH_ROUNDS=1 BENCH_CALLS=2000 BENCH_WAITS=40 BENCH_CONTENDED_ROUNDS=10
//! cargo bench --bench lock`. Every wait is bounded: a part that does not
//! finish stops the bench with a message, it never hangs.

mod common;
#[path = "lock/contended.rs"]
mod contended;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{Table, num, paired, quantile, rate};
use redis_patterns::lease::WaitMode;
use redis_patterns::lock::Lock;
use redis_patterns::rwlock::RwLock;
use redis_patterns::semaphore::Semaphore;
use redis_patterns::{AsyncConnection, Batch, Connection, Op, Request, scripts};

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
        "redis-server on 127.0.0.1:{}; median of {} rounds (BENCH_ROUNDS); {calls} calls a round; load average {}",
        server.port(),
        common::rounds(),
        load_average()
    );

    // --- Wrapper overhead: the same script, the same arguments -----------------
    // lock.release with a token that does not own the (absent) lock: a GET and
    // a compare, no write, so every call does identical work.
    let (key, token) = ("bench:{lock}", "not-the-owner");
    let raw_release = redis::cmd("EVALSHA")
        .arg(scripts::LOCK_RELEASE.sha1)
        .arg(3)
        .arg(key)
        .arg(format!("{key}:queue"))
        .arg(format!("{key}:places"))
        .arg(token)
        .arg("bench:{lock}:wake")
        .clone();
    let (raw, wrapped, unpiped) = paired(
        calls,
        &mut ours,
        |(con, _)| {
            for _ in 0..calls {
                let v: i64 = raw_release.query(con).expect("raw EVALSHA");
                assert_eq!(v, 0);
            }
        },
        |(_, con)| {
            for _ in 0..calls {
                let v = scripts::lock::release(
                    key,
                    &format!("{}:queue", key),
                    &format!("{}:places", key),
                    token,
                    "bench:{lock}:wake",
                )
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
        |(con, _)| common::raw_pipelines(con, batches, depth, &raw_release),
        |(_, con)| {
            for _ in 0..batches {
                let mut batch = Batch::new();
                for _ in 0..depth {
                    batch.script(scripts::lock::release(
                        key,
                        &format!("{}:queue", key),
                        &format!("{}:places", key),
                        token,
                        "bench:{lock}:wake",
                    ));
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

    // --- Throughput: acquire + release pairs for one client ---------------------
    // The floor: SET NX PX, then a minimal compare-and-delete EVALSHA (no
    // checks, no fencing, no wake-up) — the two round trips any correct
    // owner-token lock needs, issued directly.
    let pairs = calls / 2;
    let cad = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
    let cad_sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(cad)
        .query(&mut con)
        .expect("SCRIPT LOAD of the floor's compare-and-delete");
    let lock = Lock::new("bench-pairs", Duration::from_secs(10)).expect("valid lock");
    let sem = Semaphore::new("bench-pairs", 4, Duration::from_secs(10)).expect("valid semaphore");
    let floor_key = "bench:{floor}";
    let floor_pairs = |con: &mut redis::Connection| {
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
                .arg(&cad_sha)
                .arg(1)
                .arg(floor_key)
                .arg(&token)
                .query(con)
                .expect("CAD");
            assert_eq!(v, 1);
        }
    };
    // `pairs` acquire + release pairs of `one`, against the floor's.
    let mut against_floor = |one: &dyn Fn(&mut Connection)| {
        paired(
            pairs,
            &mut ours,
            |(con, _)| floor_pairs(con),
            |(_, con)| (0..pairs).for_each(|_| one(con)),
        )
    };
    let (floor, lock_rate, lock_ratio) = against_floor(&|con| {
        let lease = lock.try_acquire().run(con).expect("free lock");
        assert_eq!(
            lock.release(&lease.token).run(con).expect("release"),
            Some(true)
        );
    });
    let (sem_floor, sem_rate, sem_ratio) = against_floor(&|con| {
        let permit = sem.try_acquire().run(con).expect("a free permit");
        assert_eq!(
            sem.release(&permit.token).run(con).expect("release"),
            Some(true)
        );
    });
    let mut t = Table::new(
        "Acquire + release pairs/s, one client, uncontended",
        &[
            "pattern",
            "SET NX PX + compare-and-delete (floor)",
            "ours",
            "ours / floor (median of rounds)",
        ],
    );
    t.row(vec![
        "Lock::try_acquire + release".into(),
        num(floor),
        num(lock_rate),
        format!("{lock_ratio:.3}x"),
    ]);
    t.row(vec![
        "Semaphore::try_acquire + release (4 permits)".into(),
        num(sem_floor),
        num(sem_rate),
        format!("{sem_ratio:.3}x"),
    ]);
    t.print();

    // Where a pair's time goes: the client's and the server's time on a CPU
    // and queued for one (runnable behind other processes), per pair, over
    // one more run of each. The pairs send what the floor sends (two
    // requests, nothing else: INFO commandstats says so); on a shared
    // machine every microsecond of CPU a request costs also waits its turn.
    let pid = common::server_pid(&mut con);
    let mut t = Table::new(
        "Where a pair's time goes (Linux schedstat, us per pair, one run of each; the columns overlap, so they need not add up to the wall time)",
        &[
            "pattern",
            "wall",
            "client on CPU",
            "client queued",
            "server on CPU",
            "server queued",
        ],
    );
    let mut breakdown = |name: &str, run: &mut dyn FnMut(&mut (redis::Connection, Connection))| {
        let (Some(c0), Some(s0)) = (
            common::Sched::this_thread(),
            pid.as_deref().and_then(common::Sched::process),
        ) else {
            return;
        };
        let started = Instant::now();
        run(&mut ours);
        let wall = started.elapsed().as_secs_f64() * 1e6 / pairs as f64;
        let (Some(c1), Some(s1)) = (
            common::Sched::this_thread(),
            pid.as_deref().and_then(common::Sched::process),
        ) else {
            return;
        };
        let (c, s) = (c1.per(c0, pairs), s1.per(s0, pairs));
        t.row(vec![
            name.into(),
            format!("{wall:.1}"),
            format!("{:.1}", c.on_cpu_us),
            format!("{:.1}", c.queued_us),
            format!("{:.1}", s.on_cpu_us),
            format!("{:.1}", s.queued_us),
        ]);
    };
    breakdown("floor", &mut |(con, _)| floor_pairs(con));
    breakdown("Lock", &mut |(_, con)| {
        for _ in 0..pairs {
            let lease = lock.try_acquire().run(con).expect("free lock");
            lock.release(&lease.token).run(con).expect("release");
        }
    });
    breakdown("Semaphore", &mut |(_, con)| {
        for _ in 0..pairs {
            let permit = sem.try_acquire().run(con).expect("a free permit");
            sem.release(&permit.token).run(con).expect("release");
        }
    });
    t.print();

    // --- Handoff latency: release -> the waiter holds the lock -----------------
    // A handoff wakes an idle waiter, so besides the hot round trip (PING in
    // a loop) two baselines are measured the same way as the handoffs: one
    // PING after the same idle pause, and the floor of any woken handoff,
    // raw redis-rs: a thread blocked on SSUBSCRIBE, woken by an SPUBLISH,
    // sends one PING.
    let samples = common::env_or("BENCH_WAITS", 200);
    let rtt_ms = {
        let n = 5000;
        let per_s = rate(n, || {
            for _ in 0..n {
                let _: String = redis::cmd("PING").query(&mut con).expect("PING");
            }
        });
        1000.0 / per_s
    };
    let mut idle = Vec::with_capacity(samples);
    for i in 0..samples {
        thread::sleep(pause(i));
        let t = Instant::now();
        let _: String = redis::cmd("PING").query(&mut con).expect("PING");
        idle.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let idle_ms = quantile(&mut idle, 0.5);
    let bounded = common::watchdog(
        &server.url(),
        "the handoff latency section",
        Duration::from_secs(120 + samples as u64),
    );
    let mut raw = raw_wakeups(&server.url(), &mut con, samples);
    let mut holder = Connection::open(server.url()).expect("connect");
    let notified = Lock::new("bench-wait", Duration::from_secs(10)).expect("valid lock");
    let polling = Lock::builder("bench-poll")
        .lease(Duration::from_secs(10))
        .wait_mode(WaitMode::Polling {
            interval: Lock::DEFAULT_POLL_INTERVAL,
        })
        .build()
        .expect("valid lock");
    let mut t = Table::new(
        "Handoff latency: release -> the waiter holds the lock",
        &[
            "waiting",
            "samples",
            "p50 ms",
            "p99 ms",
            "p50 / hot round trip",
            "p99 / hot round trip",
            "p50 / idle round trip",
        ],
    );
    let row = |t: &mut Table, name: &str, waits: &mut Vec<f64>| {
        let (p50, p99) = (quantile(waits, 0.5), quantile(waits, 0.99));
        t.row(vec![
            name.into(),
            waits.len().to_string(),
            num(p50),
            num(p99),
            format!("{:.1}x", p50 / rtt_ms),
            format!("{:.1}x", p99 / rtt_ms),
            format!("{:.1}x", p50 / idle_ms),
        ]);
    };
    let modes: [(&str, &Lock, Waiter, usize); 3] = [
        (
            "Lock, woken by the release, sync Connection",
            &notified,
            Waiter::Sync,
            samples,
        ),
        (
            "Lock, woken by the release, AsyncConnection",
            &notified,
            Waiter::Async,
            samples,
        ),
        (
            "Lock, polling every 50 ms with jitter (the old mode)",
            &polling,
            Waiter::Sync,
            (samples / 10).max(10),
        ),
    ];
    for (name, lock, waiter, n) in modes {
        let mut waits = handoffs(&server.url(), &mut holder, lock, waiter, n);
        row(&mut t, name, &mut waits);
    }
    drop(bounded);
    row(
        &mut t,
        "floor: raw SPUBLISH wakes SSUBSCRIBE, then one PING",
        &mut raw,
    );
    let mut hot = vec![rtt_ms];
    row(&mut t, "one round trip, hot (PING in a loop)", &mut hot);
    row(
        &mut t,
        "one round trip after the same idle pause (PING)",
        &mut idle,
    );
    t.print();

    // --- Contended: 16 waiters on one lock, 8 readers + 8 writers on one rwlock
    contended_section(&server.url(), &mut con, samples);
}

/// The contended runs (see `lock/contended.rs`) and their table, then the
/// fair order of arrival, which fails the bench when it is not kept.
fn contended_section(url: &str, con: &mut redis::Connection, samples: usize) {
    use contended::{Subject, Take};
    let rounds = common::env_or("BENCH_CONTENDED_ROUNDS", 20);
    println!(
        "contended: {rounds} acquisitions per waiter (BENCH_CONTENDED_ROUNDS); load average {}",
        load_average()
    );
    let lock = |name: &str, fair: bool| {
        let lock = Lock::builder(name)
            .lease(Duration::from_secs(10))
            .fair(fair);
        Subject::Lock(lock.build().expect("valid lock"))
    };
    let rwlock = |name: &str, fair: bool| {
        let rw = RwLock::builder(name)
            .lease(Duration::from_secs(10))
            .fair(fair);
        Subject::RwLock(rw.build().expect("valid rwlock"))
    };
    let locks = [Take::Lock; contended::WAITERS];
    // Readers and writers interleaved, 8 of each.
    let mixed: Vec<Take> = "RRWRWWRWRRWRWWRW"
        .chars()
        .map(|c| if c == 'R' { Take::Read } else { Take::Write })
        .collect();
    let cases: [(&str, Subject, &[Take], bool); 6] = [
        (
            "lock, fair, sync Connection per waiter",
            lock("c-fair", true),
            &locks,
            true,
        ),
        (
            "lock, not fair, sync Connection per waiter",
            lock("c-unfair", false),
            &locks,
            true,
        ),
        (
            "lock, fair, tasks on one AsyncConnection",
            lock("c-fair-a", true),
            &locks,
            false,
        ),
        (
            "lock, not fair, tasks on one AsyncConnection",
            lock("c-unfair-a", false),
            &locks,
            false,
        ),
        (
            "rwlock, fair, 8 readers + 8 writers, sync",
            rwlock("c-rw-fair", true),
            &mixed,
            true,
        ),
        (
            "rwlock, not fair, 8 readers + 8 writers, sync",
            rwlock("c-rw", false),
            &mixed,
            true,
        ),
    ];
    let mut runs = Vec::new();
    for (name, subject, takes, sync) in cases {
        let _bounded = common::watchdog(
            url,
            &format!("contended run \"{name}\""),
            Duration::from_secs(300),
        );
        runs.push((
            name.to_string(),
            contended::run(url, con, &subject, takes, rounds, sync),
        ));
    }
    let _bounded = common::watchdog(url, "contended baselines", Duration::from_secs(120));
    let mut base = contended::Baselines {
        ping_ms: ping_samples(con, samples.max(1000)),
        floor_ms: raw_wakeups(url, con, samples),
    };
    contended::print(&mut runs, &mut base);
    println!("load average after the contended runs: {}", load_average());
    let mut kept = true;
    for (name, subject, takes) in [
        ("lock", lock("c-order", true), &locks[..]),
        (
            "rwlock (8 readers + 8 writers)",
            rwlock("c-rw-order", true),
            &mixed[..],
        ),
    ] {
        let _bounded = common::watchdog(
            url,
            &format!("fair order, {name}"),
            Duration::from_secs(120),
        );
        let (order, wrong) = contended::fair_order(url, con, &subject, takes);
        println!(
            "fair {name}: {} waiters arrived one after another; acquisition order {order:?}; {} pairs out of their order of arrival{}",
            takes.len(),
            wrong.len(),
            if wrong.is_empty() {
                String::new()
            } else {
                format!(": {wrong:?}")
            }
        );
        kept &= wrong.is_empty();
    }
    assert!(kept, "fair mode did not keep the order of arrival (above)");
}

/// The load average of the machine (1, 5, 15 minutes), as /proc/loadavg
/// says.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown (no /proc/loadavg)".into())
}

/// `n` PING round trips in a loop, ms each.
fn ping_samples(con: &mut redis::Connection, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let _: String = redis::cmd("PING").query(con).expect("PING");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

/// The idle pause before sample `i` (2 to 11 ms).
fn pause(i: usize) -> Duration {
    Duration::from_millis(2 + (i as u64 * 7) % 10)
}

/// The floor of a woken handoff with redis-rs alone: ms from an SPUBLISH
/// to a subscribed thread having woken and sent one PING.
///
/// Every wait is bounded: the first SPUBLISH goes out only once the thread
/// has its subscription confirmed (a message published before it would be
/// lost, and both sides would wait for ever: how an earlier version hung),
/// each SPUBLISH must reach exactly that one subscriber, and the thread's
/// reads and the bench's waits for it time out with a message.
fn raw_wakeups(url: &str, con: &mut redis::Connection, n: usize) -> Vec<f64> {
    const LIMIT: Duration = Duration::from_secs(10);
    let info = redis::IntoConnectionInfo::into_connection_info(url).expect("url");
    let resp3 = info.clone().set_redis_settings(
        info.redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP3),
    );
    let (go, jobs) = mpsc::channel::<()>();
    let (done, got) = mpsc::channel::<Instant>();
    let url = url.to_string();
    let worker = thread::spawn(move || {
        let open = |info: redis::ConnectionInfo| {
            let con = redis::Client::open(info)
                .and_then(|c| c.get_connection_with_timeout(LIMIT))
                .expect("connect");
            con.set_read_timeout(Some(LIMIT)).expect("read timeout");
            con.set_write_timeout(Some(LIMIT)).expect("write timeout");
            con
        };
        let mut sub = open(resp3);
        let mut ping =
            open(redis::IntoConnectionInfo::into_connection_info(url.as_str()).expect("url"));
        sub.send_packed_command(
            &redis::cmd("SSUBSCRIBE")
                .arg("bench:{raw}")
                .get_packed_command(),
        )
        .expect("SSUBSCRIBE");
        let confirmed = sub.recv_response().expect("the SSUBSCRIBE confirmation");
        assert!(
            matches!(
                confirmed,
                redis::Value::Push {
                    kind: redis::PushKind::SSubscribe,
                    ..
                }
            ),
            "SSUBSCRIBE answered {confirmed:?}"
        );
        // Subscribed: the bench may publish.
        done.send(Instant::now()).expect("report");
        while jobs.recv().is_ok() {
            loop {
                let v = sub.recv_response().unwrap_or_else(|e| {
                    panic!(
                        "raw floor: no message within {} s of being started: {e}",
                        LIMIT.as_secs()
                    )
                });
                if matches!(
                    v,
                    redis::Value::Push {
                        kind: redis::PushKind::SMessage,
                        ..
                    }
                ) {
                    break;
                }
            }
            let _: String = redis::cmd("PING").query(&mut ping).expect("PING");
            done.send(Instant::now()).expect("report");
        }
    });
    let wait = |what: &str| {
        got.recv_timeout(LIMIT).unwrap_or_else(|e| {
            panic!(
                "raw floor: the subscribed thread {what} within {} s ({e})",
                LIMIT.as_secs()
            )
        })
    };
    wait("did not confirm its SSUBSCRIBE");
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        go.send(()).expect("start");
        thread::sleep(pause(i));
        let t = Instant::now();
        let receivers: i64 = redis::cmd("SPUBLISH")
            .arg("bench:{raw}")
            .arg("x")
            .query(con)
            .expect("SPUBLISH");
        assert_eq!(
            receivers, 1,
            "raw floor: SPUBLISH {i} reached {receivers} subscribers, not the one thread"
        );
        out.push(wait("was not woken").duration_since(t).as_secs_f64() * 1000.0);
    }
    drop(go);
    worker.join().expect("raw waiter");
    out
}

/// Which driver the waiter runs on.
#[derive(Clone, Copy)]
enum Waiter {
    Sync,
    Async,
}

/// Subscribers of a shard channel (`PUBSUB SHARDNUMSUB`).
fn subscribers(con: &mut Connection, channel: &str) -> i64 {
    let mut cmd = redis::cmd("PUBSUB");
    cmd.arg("SHARDNUMSUB").arg(channel);
    let reply: Vec<redis::Value> = Op::cmd(channel, cmd).run(con).expect("PUBSUB");
    match reply.get(1) {
        Some(redis::Value::Int(n)) => *n,
        _ => 0,
    }
}

/// `n` handoffs of `lock` from `holder` to a waiter (a thread on its own
/// connection, sync or async): ms from just before the release is sent to
/// the waiter holding the lock.
fn handoffs(url: &str, holder: &mut Connection, lock: &Lock, waiter: Waiter, n: usize) -> Vec<f64> {
    let (go, jobs) = mpsc::channel::<()>();
    let (done, got) = mpsc::channel::<Instant>();
    let worker = {
        let (lock, url) = (lock.clone(), url.to_string());
        thread::spawn(move || match waiter {
            Waiter::Sync => {
                let mut con = Connection::open(url.as_str()).expect("connect");
                while jobs.recv().is_ok() {
                    let lease = lock
                        .acquire(Duration::from_secs(10))
                        .run(&mut con)
                        .expect("acquire");
                    let at = Instant::now();
                    assert_eq!(
                        lock.release(&lease.token).run(&mut con).expect("release"),
                        Some(true)
                    );
                    done.send(at).expect("report");
                }
            }
            Waiter::Async => {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                rt.block_on(async {
                    let con = AsyncConnection::open(url.as_str()).await.expect("connect");
                    while jobs.recv().is_ok() {
                        let lease = lock
                            .acquire(Duration::from_secs(10))
                            .run_async(&con)
                            .await
                            .expect("acquire");
                        let at = Instant::now();
                        assert_eq!(
                            lock.release(&lease.token)
                                .run_async(&con)
                                .await
                                .expect("release"),
                            Some(true)
                        );
                        done.send(at).expect("report");
                    }
                });
            }
        })
    };
    let notified = lock.wait_mode() == WaitMode::Notified;
    let mut waits = Vec::with_capacity(n);
    for i in 0..n {
        let held = lock.try_acquire().run(holder).expect("free lock");
        go.send(()).expect("start the waiter");
        if notified {
            // Subscribed, then a little more so that its re-check is done and
            // it waits for the message.
            let deadline = Instant::now() + Duration::from_secs(30);
            while subscribers(holder, lock.channel()) == 0 {
                assert!(
                    Instant::now() < deadline,
                    "the waiter did not subscribe within 30 s"
                );
                thread::sleep(Duration::from_micros(200));
            }
            thread::sleep(pause(i));
        } else {
            // Anywhere in the waiter's poll cycle.
            thread::sleep(Duration::from_millis(20 + (i as u64 * 37) % 60));
        }
        let released = Instant::now();
        assert_eq!(
            lock.release(&held.token).run(holder).expect("release"),
            Some(true)
        );
        let at = got
            .recv_timeout(Duration::from_secs(30))
            .expect("the waiter got the lock within 30 s of its release");
        waits.push(at.duration_since(released).as_secs_f64() * 1000.0);
    }
    drop(go);
    worker.join().expect("waiter");
    waits
}
