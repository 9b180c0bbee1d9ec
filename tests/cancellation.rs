//! Cancellation safety of the async driver, against real servers (one
//! server, and a three-node cluster): every coordination operation (lock
//! acquire, try_acquire, release, extend; guard acquire and release of a
//! lock, a permit and both sides of a read-write lock; semaphore and
//! read-write lock acquires and releases; waits on a wake channel) is
//! dropped at random points, by `tokio::time::timeout` with a random
//! duration of 0–400 µs or by aborting its spawned task after a random
//! 0–400 µs, half the time while someone else holds what it asks for.
//! Afterwards (background cleanup given a moment, polled up to a bound),
//! nothing is left: no lock, permit or lease held (every task that got one
//! gave it back, so whatever is held belongs to no live task), no place in
//! a waiter queue, no wake
//! channel subscribed (`PUBSUB SHARDNUMSUB`), and as many clients
//! connected as at the start (`CLIENT LIST`).
//!
//! `CANCELLATION_TRIES` sets the tries per operation (default 1,000);
//! `cargo test --test cancellation -- --nocapture` prints the figures.

#[path = "support/splitmix.rs"]
mod splitmix;
mod support;

use std::future::Future;
use std::time::{Duration, Instant};

use redis_patterns::lease::{AsyncGuard, Leasable};
use redis_patterns::lock::Lock;
use redis_patterns::rwlock::{Role, RwLease, RwLock};
use redis_patterns::semaphore::Semaphore;
use redis_patterns::{AsyncConnection, Connection, Op, Request};
use splitmix::SplitMix64;

/// Long enough that a leftover cannot expire during the test.
const LEASE: Duration = Duration::from_secs(10);
/// The timeout of every waiting acquire (the drops come much earlier).
const WAIT: Duration = Duration::from_secs(2);
/// How long cleanup may take before a leftover counts as leaked.
const CLEANUP_BOUND: Duration = Duration::from_secs(10);

fn tries() -> usize {
    std::env::var("CANCELLATION_TRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

/// The tries' generator, seeded from `CANCELLATION_SEED`, else from the
/// clock (the seed is printed, to replay).
fn seeded() -> SplitMix64 {
    let seed = std::env::var("CANCELLATION_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("CANCELLATION_SEED={seed}");
    SplitMix64(seed)
}

/// What the tries of one operation did.
#[derive(Default)]
struct Tally {
    tries: usize,
    timed_out: usize,
    aborted: usize,
}

impl Tally {
    fn dropped(&self) -> usize {
        self.timed_out + self.aborted
    }
}

struct Ctx {
    rt: tokio::runtime::Runtime,
    con: AsyncConnection,
    lock: Lock,
    sem: Semaphore,
    rw: RwLock,
    rng: SplitMix64,
    tally: Tally,
}

impl Ctx {
    /// Runs `fut` to its end (setup and the owners' own releases).
    fn run<T>(&self, fut: impl Future<Output = T>) -> T {
        self.rt.block_on(fut)
    }

    fn go<R: Request>(&self, req: R) -> R::Output {
        let con = self.con.clone();
        self.run(async move { req.run_async(&con).await })
            .unwrap_or_else(|e| panic!("setup (a leftover of a dropped operation?): {e}"))
    }

    /// Runs `fut`, dropped after a random 0–400 µs (a timeout, or the abort
    /// of its task): its output when it finished first.
    fn cancel<T: Send + 'static>(
        &mut self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        self.tally.tries += 1;
        let after = Duration::from_micros(self.rng.below(401) as u64);
        if self.rng.coin() {
            let out = self
                .rt
                .block_on(async move { tokio::time::timeout(after, fut).await })
                .ok();
            self.tally.timed_out += usize::from(out.is_none());
            out
        } else {
            let task = self.rt.spawn(fut);
            std::thread::sleep(after);
            task.abort();
            match self.rt.block_on(task) {
                Ok(out) => Some(out),
                Err(e) if e.is_cancelled() => {
                    self.tally.aborted += 1;
                    None
                }
                Err(e) => panic!("task failed: {e}"),
            }
        }
    }

    /// Runs the op `req` on a clone of the connection, dropped at random.
    fn cancel_op<R: Request>(&mut self, req: R) -> Option<redis_patterns::Result<R::Output>> {
        let con = self.con.clone();
        self.cancel(async move { req.run_async(&con).await })
    }

    /// Half the time: `take` (run now), given back by `give` in a task of
    /// its own, racing the try; the handle to wait for.
    fn maybe_held<L: Send + Sync + 'static>(
        &mut self,
        take: impl FnOnce(&Ctx) -> Vec<L>,
        give: impl Fn(&L) -> Op<Option<bool>> + Send + Sync + 'static,
    ) -> Option<tokio::task::JoinHandle<()>> {
        if !self.rng.coin() {
            return None;
        }
        let held = take(self);
        let con = self.con.clone();
        Some(self.rt.spawn(async move {
            for l in &held {
                give(l).run_async(&con).await.expect("holder's release");
            }
        }))
    }

    fn join(&self, holder: Option<tokio::task::JoinHandle<()>>) {
        if let Some(h) = holder {
            self.run(h).expect("holder");
        }
    }

    fn lock_held(&mut self) -> Option<tokio::task::JoinHandle<()>> {
        let lock = self.lock.clone();
        self.maybe_held(
            |c| vec![c.go(c.lock.acquire(WAIT)).token],
            move |t| lock.release(t),
        )
    }

    fn sem_held(&mut self) -> Option<tokio::task::JoinHandle<()>> {
        let sem = self.sem.clone();
        self.maybe_held(
            |c| (0..2).map(|_| c.go(c.sem.acquire(WAIT)).token).collect(),
            move |t| sem.release(t),
        )
    }

    fn rw_held(&mut self, role: Role) -> Option<tokio::task::JoinHandle<()>> {
        let rw = self.rw.clone();
        self.maybe_held(
            |c| {
                vec![
                    c.go(c
                        .rw
                        .wait_as(role, &redis_patterns::lock::Lock::new_token(), WAIT)),
                ]
            },
            move |l: &RwLease| rw.release(l),
        )
    }
}

/// One try of each operation.
type Try = fn(&mut Ctx);

fn lock_acquire(c: &mut Ctx) {
    let holder = c.lock_held();
    let op = if c.rng.coin() {
        c.lock.acquire(WAIT)
    } else {
        c.lock
            .acquire_as(&redis_patterns::lock::Lock::new_token(), WAIT)
    };
    if let Some(Ok(lease)) = c.cancel_op(op) {
        c.go(c.lock.release(&lease.token));
    }
    c.join(holder);
}

fn lock_try_acquire(c: &mut Ctx) {
    let holder = c.lock_held();
    if let Some(Ok(lease)) = c.cancel_op(c.lock.try_acquire()) {
        c.go(c.lock.release(&lease.token));
    }
    c.join(holder);
}

/// A release of `r`, dropped at random.
fn release_of<R: Leasable>(c: &mut Ctx, r: R) {
    let lease = c.go(r.acquire(WAIT));
    if c.cancel_op(r.release(&lease)).is_none() {
        // A dropped release may not have run: the owner runs it again.
        c.go(r.release(&lease));
    }
}

fn lock_release(c: &mut Ctx) {
    release_of(c, c.lock.clone());
}

fn lock_extend(c: &mut Ctx) {
    let lease = c.go(c.lock.acquire(WAIT));
    let _ = c.cancel_op(c.lock.extend(&lease.token, LEASE));
    assert_eq!(c.go(c.lock.release(&lease.token)), Some(true));
}

/// A guard acquire of `r`, dropped at random; a guard that came is
/// released or dropped (which has its task release).
fn guard_on<R: Leasable>(c: &mut Ctx, r: R) {
    let con = c.con.clone();
    let got = c.cancel(async move { AsyncGuard::acquire(&r, &con, WAIT).await });
    if let Some(Ok(guard)) = got {
        if c.rng.coin() {
            c.run(guard.release()).expect("guard release");
        } else {
            drop(guard);
        }
    }
}

fn guard_acquire(c: &mut Ctx) {
    match c.rng.below(4) {
        0 => {
            let holder = c.lock_held();
            guard_on(c, c.lock.clone());
            c.join(holder);
        }
        1 => {
            let holder = c.sem_held();
            guard_on(c, c.sem.clone());
            c.join(holder);
        }
        2 => {
            let holder = c.rw_held(Role::Write);
            guard_on(c, c.rw.reading());
            c.join(holder);
        }
        _ => {
            let holder = c.rw_held(Role::Read);
            guard_on(c, c.rw.writing());
            c.join(holder);
        }
    }
}

fn guard_release_of<R: Leasable>(c: &mut Ctx, r: R) {
    let con = c.con.clone();
    let guard = c
        .run(AsyncGuard::acquire(&r, &con, WAIT))
        .expect("guard acquire");
    // No second chance: the guard must release though its release was
    // dropped.
    let _ = c.cancel(guard.release());
}

fn guard_release(c: &mut Ctx) {
    match c.rng.below(4) {
        0 => guard_release_of(c, c.lock.clone()),
        1 => guard_release_of(c, c.sem.clone()),
        2 => guard_release_of(c, c.rw.reading()),
        _ => guard_release_of(c, c.rw.writing()),
    }
}

fn semaphore_acquire(c: &mut Ctx) {
    let holder = c.sem_held();
    let op = if c.rng.coin() {
        c.sem.acquire(WAIT)
    } else {
        c.sem.try_acquire()
    };
    if let Some(Ok(permit)) = c.cancel_op(op) {
        c.go(c.sem.release(&permit.token));
    }
    c.join(holder);
}

fn semaphore_release(c: &mut Ctx) {
    release_of(c, c.sem.clone());
}

fn rwlock_acquire(c: &mut Ctx) {
    let role = if c.rng.coin() {
        Role::Read
    } else {
        Role::Write
    };
    // Someone of the other role holds it half the time.
    let holder = c.rw_held(match role {
        Role::Read => Role::Write,
        Role::Write => Role::Read,
    });
    let op = match (role, c.rng.coin()) {
        (Role::Read, true) => c.rw.read(WAIT),
        (Role::Read, false) => c.rw.try_read(),
        (Role::Write, true) => c.rw.write(WAIT),
        (Role::Write, false) => c.rw.try_write(),
    };
    if let Some(Ok(lease)) = c.cancel_op(op) {
        c.go(c.rw.release(&lease));
    }
    c.join(holder);
}

fn rwlock_release(c: &mut Ctx) {
    let lease = if c.rng.coin() {
        c.go(c.rw.read(WAIT))
    } else {
        c.go(c.rw.write(WAIT))
    };
    if c.cancel_op(c.rw.release(&lease)).is_none() {
        c.go(c.rw.release(&lease));
    }
}

fn waits(c: &mut Ctx) {
    let channel = match c.rng.below(3) {
        0 => c.lock.channel().to_string(),
        1 => c.sem.channel().to_string(),
        _ => c.rw.channel().to_string(),
    };
    let _ = c.cancel_op(Op::wait(channel, Duration::from_millis(5)));
}

/// What is left on the servers.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Left {
    /// Lock keys and write leases held.
    locks: i64,
    /// Permits and read leases held, writers' intents.
    leases: i64,
    /// Places in the waiter queues (a dropped waiter's place would hold a
    /// fair lock back for its length).
    waiters: i64,
    /// Subscribers of the wake channels.
    subscribers: i64,
    /// Clients beyond those at the start.
    clients: i64,
}

impl Left {
    fn nothing(&self) -> bool {
        *self == Left::default()
    }
}

/// The checker: a sync connection for keys and channels, and one plain
/// connection per node for `CLIENT LIST`.
struct Checker {
    con: Connection,
    nodes: Vec<redis::Connection>,
    clients_at_start: i64,
}

impl Checker {
    fn new(url: &str, nodes: Vec<redis::Connection>) -> Self {
        let mut con = Connection::open(url).expect("checker");
        con.set_call_mode(support::call_mode());
        Checker {
            con,
            nodes,
            clients_at_start: 0,
        }
    }

    fn int(&mut self, key: &str, cmd: &mut redis::Cmd) -> i64 {
        Op::<i64>::cmd(key, cmd.clone())
            .run(&mut self.con)
            .unwrap_or_else(|e| panic!("check on {key}: {e}"))
    }

    fn subscribers(&mut self, channel: &str) -> i64 {
        let reply: Vec<redis::Value> = Op::cmd(
            channel,
            redis::cmd("PUBSUB")
                .arg("SHARDNUMSUB")
                .arg(channel)
                .to_owned(),
        )
        .run(&mut self.con)
        .expect("PUBSUB SHARDNUMSUB");
        match reply.get(1) {
            Some(redis::Value::Int(n)) => *n,
            other => panic!("PUBSUB SHARDNUMSUB reply {other:?}"),
        }
    }

    fn clients(&mut self) -> i64 {
        self.nodes
            .iter_mut()
            .map(|n| {
                let list: String = redis::cmd("CLIENT")
                    .arg("LIST")
                    .query(n)
                    .expect("CLIENT LIST");
                list.lines().filter(|l| !l.trim().is_empty()).count() as i64
            })
            .sum()
    }

    fn left(&mut self, c: &Ctx) -> Left {
        let exists = |k: &str| redis::cmd("EXISTS").arg(k).to_owned();
        let zcard = |k: &str| redis::cmd("ZCARD").arg(k).to_owned();
        let locks = self.int(c.lock.key(), &mut exists(c.lock.key()))
            + self.int(c.rw.writer_key(), &mut exists(c.rw.writer_key()));
        let leases = self.int(c.sem.key(), &mut zcard(c.sem.key()))
            + self.int(c.rw.readers_key(), &mut zcard(c.rw.readers_key()))
            + self.int(c.rw.intents_key(), &mut zcard(c.rw.intents_key()));
        let mut waiters = 0;
        for (queue, places) in [
            (c.lock.queue_key(), c.lock.places_key()),
            (c.sem.queue_key(), c.sem.places_key()),
            (c.rw.queue_key(), c.rw.places_key()),
        ] {
            waiters += self.int(queue, &mut zcard(queue)) + self.int(places, &mut zcard(places));
        }
        let subscribers = [c.lock.channel(), c.sem.channel(), c.rw.channel()]
            .iter()
            .map(|ch| self.subscribers(ch))
            .sum();
        let clients = self.clients() - self.clients_at_start;
        Left {
            locks,
            leases,
            waiters,
            subscribers,
            clients,
        }
    }

    /// What is left right away, and once cleanup had its chance (polled
    /// up to [`CLEANUP_BOUND`]), with how long that took.
    fn settle(&mut self, c: &Ctx) -> (Left, Left, Duration) {
        let started = Instant::now();
        let first = self.left(c);
        let mut last = first;
        while !last.nothing() && started.elapsed() < CLEANUP_BOUND {
            std::thread::sleep(Duration::from_millis(5));
            last = self.left(c);
        }
        (first, last, started.elapsed())
    }
}

fn cancel_everything(topology: &str, url: &str, nodes: Vec<redis::Connection>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let con = rt
        .block_on(AsyncConnection::open(url))
        .expect("async connection")
        .with_call_mode(support::call_mode());
    let mut c = Ctx {
        lock: Lock::builder("cancel-lock").lease(LEASE).build().unwrap(),
        sem: Semaphore::builder("cancel-sem", 2)
            .lease(LEASE)
            .build()
            .unwrap(),
        rw: RwLock::builder("cancel-rw").lease(LEASE).build().unwrap(),
        rt,
        con,
        rng: seeded(),
        tally: Tally::default(),
    };
    let mut check = Checker::new(url, nodes);
    // Warm up: every connection the tries use (the nodes of the keys, the
    // subscription links of the channels), so that the clients counted at
    // the start are all there are.
    for channel in [c.lock.channel(), c.sem.channel(), c.rw.channel()] {
        c.go(Op::wait(channel.to_string(), Duration::from_millis(1)));
    }
    lock_release(&mut c);
    semaphore_release(&mut c);
    rwlock_release(&mut c);
    let (_, warm, _) = check.settle(&c);
    assert_eq!(
        (warm.locks, warm.leases, warm.waiters, warm.subscribers),
        (0, 0, 0, 0)
    );
    check.clients_at_start = check.clients();

    let ops: [(&str, Try); 11] = [
        ("lock acquire", lock_acquire),
        ("lock try_acquire", lock_try_acquire),
        ("lock release", lock_release),
        ("lock extend", lock_extend),
        ("guard acquire", guard_acquire),
        ("guard release", guard_release),
        ("semaphore acquire", semaphore_acquire),
        ("semaphore release", semaphore_release),
        ("rwlock acquire", rwlock_acquire),
        ("rwlock release", rwlock_release),
        ("waits", waits),
    ];
    let n = tries();
    let mut leaks = Vec::new();
    for (name, one) in ops {
        c.tally = Tally::default();
        let started = Instant::now();
        for _ in 0..n {
            one(&mut c);
        }
        let ran = started.elapsed();
        let (first, last, settled) = check.settle(&c);
        let t = &c.tally;
        println!(
            "{topology}: {name}: {} tries in {} ms, {} dropped ({} timeouts, {} aborts); \
             left right after: {first:?}; after {} ms: {last:?}",
            t.tries,
            ran.as_millis(),
            t.dropped(),
            t.timed_out,
            t.aborted,
            settled.as_millis()
        );
        assert!(t.tries >= n, "{name}: every try ran");
        assert!(
            t.dropped() > 0,
            "{name}: none of {} tries was dropped before it finished (the test tested nothing)",
            t.tries
        );
        if !last.nothing() {
            leaks.push(format!("{name}: {last:?}"));
        }
    }
    assert!(
        leaks.is_empty(),
        "{topology}: left behind by dropped operations:\n{}",
        leaks.join("\n")
    );
}

#[test]
fn dropped_operations_leave_nothing_behind_on_a_server() {
    let server = support::server();
    cancel_everything("server", &server.url(), vec![server.connection()]);
}

#[test]
fn dropped_operations_leave_nothing_behind_on_a_cluster() {
    let cluster = support::cluster();
    let nodes = cluster.nodes().iter().map(|n| n.connection()).collect();
    cancel_everything("cluster", &cluster.urls()[0], nodes);
}
