//! The contended case of `cargo bench --bench lock`: 16 waiters on one lock
//! (or 8 readers and 8 writers on one read-write lock), each taking it,
//! letting go and coming back.
//!
//! Each run has two phases. Cold: every waiter's first acquisition, all of
//! them starting at once (a waiter that has not waited yet makes its first
//! attempt before subscribing, so it may need a third script). Steady: the
//! remaining rounds, started from a held lock with all waiters queued, so
//! that every acquisition waits its turn; the goal (≤ 2 acquire scripts per
//! acquisition: the refused attempt and the one its wake-up makes) is
//! measured on it. Acquire scripts are counted by the server (`INFO
//! commandstats`: every script call minus the releases, which are one per
//! acquisition). The handoff is the time from the reply to the release that
//! left the lock free to the reply of the next holder's acquire (steady
//! phase; a reader after a reader is no handoff, they share the lock, and
//! is not counted). In fair mode, 16 waiters that arrive one after another (each
//! queued before the next starts) must get the lock in their order of
//! arrival (readers next to each other in any order among themselves).

use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::lock::{Lease, Lock};
use redis_patterns::rwlock::{RwLease, RwLock};
use redis_patterns::{AsyncConnection, Connection, Op, Request};

use redis_patterns_test_support::script_calls;

use crate::common::{Table, num, quantile};

/// Waiters on the one lock.
pub const WAITERS: usize = 16;

/// The longest any acquire of the bench waits (then it fails the bench).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest the waiters take to be queued behind a held lock.
const QUEUE_TIMEOUT: Duration = Duration::from_secs(60);

/// What the bench contends on.
#[derive(Clone)]
pub enum Subject {
    Lock(Lock),
    RwLock(RwLock),
}

/// What a waiter takes: the lock, or a read or write lease of the rwlock.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Take {
    Lock,
    Read,
    Write,
}

/// What a waiter holds.
pub enum Held {
    Lock(Lease),
    Rw(RwLease),
}

impl Subject {
    fn queue_key(&self) -> &str {
        match self {
            Subject::Lock(l) => l.queue_key(),
            Subject::RwLock(l) => l.queue_key(),
        }
    }

    /// A waiting acquire (bounded by [`ACQUIRE_TIMEOUT`]).
    fn acquire(&self, take: Take) -> Op<Held> {
        match (self, take) {
            (Subject::Lock(l), _) => l.acquire(ACQUIRE_TIMEOUT).map(Held::Lock),
            (Subject::RwLock(l), Take::Write) => l.write(ACQUIRE_TIMEOUT).map(Held::Rw),
            (Subject::RwLock(l), _) => l.read(ACQUIRE_TIMEOUT).map(Held::Rw),
        }
    }

    /// One attempt that takes the lock exclusively (the lock, or the
    /// rwlock's write lease).
    fn try_exclusive(&self) -> Op<Held> {
        match self {
            Subject::Lock(l) => l.try_acquire().map(Held::Lock),
            Subject::RwLock(l) => l.try_write().map(Held::Rw),
        }
    }

    fn release(&self, held: &Held) -> Op<Option<bool>> {
        match (self, held) {
            (Subject::Lock(l), Held::Lock(lease)) => l.release(&lease.token),
            (Subject::RwLock(l), Held::Rw(lease)) => l.release(lease),
            _ => unreachable!("a lease of the subject's own kind"),
        }
    }
}

/// The handoffs of one run: who holds the lock (in this process), and for
/// each time it became free, when the reply to that release came and when
/// the next holder's acquire replied. A reader that follows a reader is no
/// handoff (readers share the lock: it may have been granted while the
/// other still held it), so such a spell is not recorded.
#[derive(Default)]
struct Handoffs {
    holders: usize,
    /// Whether the steady phase runs (handoffs are recorded).
    recording: bool,
    /// The free spell the next holder ends.
    pending: Option<usize>,
    released: Vec<Option<Instant>>,
    acquired: Vec<Option<Instant>>,
    /// Whether the release that started the spell gave an exclusive hold
    /// back (the lock, or a write lease).
    exclusive: Vec<bool>,
}

type Shared = Arc<Mutex<Handoffs>>;

/// Books an acquire's reply (`exclusive`: the lock or a write lease).
fn acquired(h: &Shared, exclusive: bool) {
    let mut h = h.lock().expect("handoffs");
    h.holders += 1;
    if h.holders == 1
        && let Some(e) = h.pending.take()
        && (exclusive || h.exclusive[e])
    {
        h.acquired[e] = Some(Instant::now());
    }
}

/// Books a release about to be sent: the free spell it starts, if it
/// leaves the lock free (before the request, so before any next acquire).
fn releasing(h: &Shared, exclusive: bool) -> Option<usize> {
    let mut h = h.lock().expect("handoffs");
    h.holders -= 1;
    if h.holders > 0 || !h.recording {
        return None;
    }
    let e = h.released.len();
    h.released.push(None);
    h.acquired.push(None);
    h.exclusive.push(exclusive);
    h.pending = Some(e);
    Some(e)
}

/// Books the release's reply.
fn released(h: &Shared, spell: Option<usize>) {
    if let Some(e) = spell {
        h.lock().expect("handoffs").released[e] = Some(Instant::now());
    }
}

/// What one contended run measured.
pub struct Run {
    pub waiters: usize,
    /// Acquire scripts per acquisition: the first acquisition of each
    /// waiter, and the steady phase.
    pub cold: f64,
    pub steady: f64,
    pub steady_acquisitions: usize,
    pub handoffs_ms: Vec<f64>,
}

/// What the waiters of a run share with the bench: the lock and the
/// handoff bookkeeping.
struct Shares {
    subject: Subject,
    handoffs: Shared,
}

/// `rounds` acquisitions per waiter (`takes`: what each one takes), sync (a
/// thread and a Connection each) or async (a task each on one
/// AsyncConnection).
pub fn run(
    url: &str,
    admin: &mut redis::Connection,
    subject: &Subject,
    takes: &[Take],
    rounds: usize,
    sync: bool,
) -> Run {
    assert!(rounds >= 2, "BENCH_CONTENDED_ROUNDS must be at least 2");
    let shares = Arc::new(Shares {
        subject: subject.clone(),
        handoffs: Arc::default(),
    });
    let n = takes.len();
    let mut turns = Turns {
        holder: Connection::open(url).expect("connect"),
        counts: vec![script_calls(admin)],
        shares: Arc::clone(&shares),
        waiters: n,
    };
    if sync {
        let (cold_done, go) = (Arc::new(Barrier::new(n + 1)), Arc::new(Barrier::new(n + 1)));
        let workers: Vec<_> = takes
            .iter()
            .map(|&take| {
                let (shares, url) = (Arc::clone(&shares), url.to_string());
                let (cold_done, go) = (Arc::clone(&cold_done), Arc::clone(&go));
                thread::spawn(move || {
                    let mut con = Connection::open(url).expect("connect");
                    for round in 0..rounds {
                        if round == 1 {
                            cold_done.wait();
                            go.wait();
                        }
                        let held = shares.subject.acquire(take).run(&mut con).expect("acquire");
                        acquired(&shares.handoffs, take != Take::Read);
                        let spell = releasing(&shares.handoffs, take != Take::Read);
                        let r = shares.subject.release(&held).run(&mut con);
                        released(&shares.handoffs, spell);
                        assert_eq!(r.expect("release"), Some(true));
                    }
                })
            })
            .collect();
        cold_done.wait();
        let held = turns.between(admin);
        go.wait();
        turns.after_go(admin, held);
        for w in workers {
            w.join().expect("waiter");
        }
    } else {
        run_async(url, admin, &mut turns, takes, rounds);
    }
    let mut counts = turns.counts;
    counts.push(script_calls(admin));
    // Each acquisition has one release; the bench's own hold between the
    // phases is one try and one release.
    let cold = counts[1] - counts[0] - n as u64;
    let steady_acquisitions = n * (rounds - 1);
    let steady = counts[2] - counts[1] - 2 - steady_acquisitions as u64;
    let h = shares.handoffs.lock().expect("handoffs");
    let handoffs_ms = h
        .released
        .iter()
        .zip(&h.acquired)
        .filter_map(|(r, a)| Some(signed_ms(*r.as_ref()?, *a.as_ref()?)))
        .collect();
    Run {
        waiters: n,
        cold: cold as f64 / n as f64,
        steady: steady as f64 / steady_acquisitions as f64,
        steady_acquisitions,
        handoffs_ms,
    }
}

/// Milliseconds from `from` to `to`, negative when `to` came first (the
/// next holder's thread read its acquire reply before the releasing thread
/// read its release reply: both come once the server has run the release).
fn signed_ms(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1000.0,
        None => -(from.duration_since(to).as_secs_f64() * 1000.0),
    }
}

/// The bench's turns between the phases: once all waiters have had their
/// first acquisition, it counts the scripts and takes the lock; once they
/// are let go, it waits until all of them are queued and releases it.
struct Turns {
    holder: Connection,
    counts: Vec<u64>,
    shares: Arc<Shares>,
    waiters: usize,
}

impl Turns {
    fn between(&mut self, admin: &mut redis::Connection) -> Held {
        self.counts.push(script_calls(admin));
        let shares = &self.shares;
        shares.handoffs.lock().expect("handoffs").recording = true;
        let held = shares
            .subject
            .try_exclusive()
            .run(&mut self.holder)
            .expect("the lock is free between the phases");
        acquired(&shares.handoffs, true);
        held
    }

    fn after_go(&mut self, admin: &mut redis::Connection, held: Held) {
        let shares = &self.shares;
        wait_queued(admin, shares.subject.queue_key(), self.waiters);
        let spell = releasing(&shares.handoffs, true);
        let r = shares.subject.release(&held).run(&mut self.holder);
        released(&shares.handoffs, spell);
        assert_eq!(r.expect("release"), Some(true));
    }
}

/// The async waiters of [`run`]: a task each on one AsyncConnection, with
/// the bench's `turns` between the phases.
fn run_async(
    url: &str,
    admin: &mut redis::Connection,
    turns: &mut Turns,
    takes: &[Take],
    rounds: usize,
) {
    let shares = &Arc::clone(&turns.shares);
    let n = takes.len();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let con = AsyncConnection::open(url).await.expect("connect");
        let cold_done = Arc::new(tokio::sync::Barrier::new(n + 1));
        let go = Arc::new(tokio::sync::Barrier::new(n + 1));
        let tasks: Vec<_> = takes
            .iter()
            .map(|&take| {
                let (shares, con) = (Arc::clone(shares), con.clone());
                let (cold_done, go) = (Arc::clone(&cold_done), Arc::clone(&go));
                tokio::spawn(async move {
                    for round in 0..rounds {
                        if round == 1 {
                            cold_done.wait().await;
                            go.wait().await;
                        }
                        let op = shares.subject.acquire(take);
                        let held = op.run_async(&con).await.expect("acquire");
                        acquired(&shares.handoffs, take != Take::Read);
                        let spell = releasing(&shares.handoffs, take != Take::Read);
                        let r = shares.subject.release(&held).run_async(&con).await;
                        released(&shares.handoffs, spell);
                        assert_eq!(r.expect("release"), Some(true));
                    }
                })
            })
            .collect();
        cold_done.wait().await;
        // The bench's turns block this thread, not the runtime's workers.
        let held = turns.between(admin);
        go.wait().await;
        turns.after_go(admin, held);
        for t in tasks {
            t.await.expect("waiter");
        }
    });
}

/// Waits until `n` waiters are queued in `queue` (at most [`QUEUE_TIMEOUT`]).
fn wait_queued(admin: &mut redis::Connection, queue: &str, n: usize) {
    let deadline = Instant::now() + QUEUE_TIMEOUT;
    loop {
        let queued: usize = redis::cmd("ZCARD").arg(queue).query(admin).expect("ZCARD");
        if queued >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {queued} of {n} waiters were queued in {queue} after {} s",
            QUEUE_TIMEOUT.as_secs()
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// A fair lock held while waiters (`takes`) arrive one after another (each
/// queued before the next starts), then let go. Returns the order in
/// which they got it and the pairs that got it out of their order of
/// arrival (a writer involved: readers next to each other may share it in
/// any order).
pub fn fair_order(
    url: &str,
    admin: &mut redis::Connection,
    subject: &Subject,
    takes: &[Take],
) -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut holder = Connection::open(url).expect("connect");
    let held = subject.try_exclusive().run(&mut holder).expect("free");
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for (i, &take) in takes.iter().enumerate() {
        let (mine, url, got) = (subject.clone(), url.to_string(), Arc::clone(&got));
        waiters.push(thread::spawn(move || {
            let mut con = Connection::open(url).expect("connect");
            let held = mine.acquire(take).run(&mut con).expect("acquire");
            got.lock().expect("order").push(i);
            // Held a moment, so that a writer after it cannot slip in
            // unseen.
            thread::sleep(Duration::from_millis(2));
            assert_eq!(
                mine.release(&held).run(&mut con).expect("release"),
                Some(true)
            );
        }));
        wait_queued(admin, subject.queue_key(), i + 1);
    }
    assert_eq!(
        subject.release(&held).run(&mut holder).expect("release"),
        Some(true)
    );
    for w in waiters {
        w.join().expect("waiter");
    }
    let order = got.lock().expect("order").clone();
    let at = |i: usize| order.iter().position(|&x| x == i).expect("every waiter");
    let mut out_of_order = Vec::new();
    for i in 0..takes.len() {
        for j in i + 1..takes.len() {
            let shared = takes[i] == Take::Read && takes[j] == Take::Read;
            if !shared && at(i) > at(j) {
                out_of_order.push((i, j));
            }
        }
    }
    (order, out_of_order)
}

/// What the contended table compares with: the hot PING and the raw
/// SPUBLISH -> SSUBSCRIBE -> PING floor, measured in the same run.
pub struct Baselines {
    pub ping_ms: Vec<f64>,
    pub floor_ms: Vec<f64>,
}

/// Prints the contended table: each run's row, then the baselines'.
pub fn print(runs: &mut [(String, Run)], base: &mut Baselines) {
    let mut t = Table::new(
        "Contended: waiters on one lock, each taking it again after its release",
        &[
            "mode",
            "waiters",
            "steady acquisitions",
            "handoffs",
            "of them next holder's reply read first",
            "acquire scripts / acq., first of each waiter",
            "acquire scripts / acq., steady (goal <= 2)",
            "handoff p50 ms",
            "handoff p99 ms",
            "p50 / PING p50",
            "p99 / PING p50",
            "p50 / floor p50",
        ],
    );
    let ping = quantile(&mut base.ping_ms, 0.5);
    let floor = quantile(&mut base.floor_ms, 0.5);
    for (name, run) in runs.iter_mut() {
        let p50 = quantile(&mut run.handoffs_ms, 0.5);
        let p99 = quantile(&mut run.handoffs_ms, 0.99);
        t.row(vec![
            name.clone(),
            run.waiters.to_string(),
            run.steady_acquisitions.to_string(),
            run.handoffs_ms.len().to_string(),
            run.handoffs_ms
                .iter()
                .filter(|&&ms| ms < 0.0)
                .count()
                .to_string(),
            format!("{:.2}", run.cold),
            format!("{:.2}", run.steady),
            num(p50),
            num(p99),
            format!("{:.1}x", p50 / ping),
            format!("{:.1}x", p99 / ping),
            format!("{:.1}x", p50 / floor),
        ]);
    }
    let mut baseline = |name: &str, v: &mut Vec<f64>| {
        let (p50, p99) = (quantile(v, 0.5), quantile(v, 0.99));
        t.row(vec![
            name.into(),
            "-".into(),
            "-".into(),
            v.len().to_string(),
            "-".into(),
            "-".into(),
            "-".into(),
            num(p50),
            num(p99),
            format!("{:.1}x", p50 / ping),
            format!("{:.1}x", p99 / ping),
            format!("{:.1}x", p50 / floor),
        ]);
    };
    baseline("one round trip, hot (PING in a loop)", &mut base.ping_ms);
    baseline(
        "floor: raw SPUBLISH wakes SSUBSCRIBE, then one PING",
        &mut base.floor_ms,
    );
    t.print();
}
