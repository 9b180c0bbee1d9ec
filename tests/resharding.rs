//! Live resharding on a real three-node cluster: the slot of a lock (its
//! key and its fence) and of a few plain keys moves to another node and
//! back (`CLUSTER SETSLOT ... IMPORTING / MIGRATING`, `MIGRATE`, `SETSLOT
//! ... NODE`), key by key, while the slot is half-migrated: plain commands
//! sent through `Connection::query` (the router's path) follow `ASK` with
//! `ASKING` like the scripts do, a script whose two keys are split between
//! the nodes waits out `TRYAGAIN` (a lock's release, whose queue keys do
//! not exist while nobody waits, is refused retryable and runs nowhere
//! until the slot settles), nothing is lost or applied twice, and a
//! blocking `acquire(timeout)` returns within its timeout and a round trip
//! even while every attempt answers `TRYAGAIN`. Then under load: the slots
//! of a lock (with a counter kept under it) and of a day's visits move
//! away and back while clients call, and nothing is lost or doubled.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use redis_patterns::core::RetryPolicy;
use redis_patterns::lock::Lock;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{Connection, ErrorKind, Op, Request};
use redis_patterns_test_support::LocalCluster;

fn node_id(cluster: &LocalCluster, n: usize) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut cluster.nodes()[n].connection())
        .unwrap()
}

fn slot_of(cluster: &LocalCluster, key: &str) -> u16 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut cluster.nodes()[0].connection())
        .unwrap()
}

fn setslot(cluster: &LocalCluster, n: usize, slot: u16, how: &str, id: &str) {
    let _: () = redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(slot)
        .arg(how)
        .arg(id)
        .query(&mut cluster.nodes()[n].connection())
        .unwrap_or_else(|e| panic!("SETSLOT {slot} {how} on node {n}: {e}"));
}

fn migrate(cluster: &LocalCluster, from: usize, to: usize, keys: &[&str]) {
    let _: () = redis::cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(cluster.nodes()[to].port())
        .arg("")
        .arg(0)
        .arg(5000)
        .arg("KEYS")
        .arg(keys)
        .query(&mut cluster.nodes()[from].connection())
        .unwrap_or_else(|e| panic!("MIGRATE {keys:?}: {e}"));
}

/// Plain commands through `query` on keys of the migrating slot: one on
/// the source (served there), one moved (ASK), one absent (ASK): every one
/// succeeds. Returns how many ran.
fn plain_commands(con: &mut Connection, round: usize) -> usize {
    let mut ran = 0;
    for key in ["{rs}:here", "{rs}:moved", "{rs}:absent"] {
        let value = format!("{round}");
        let _: () = con
            .query(redis::cmd("SET").arg(key).arg(&value))
            .unwrap_or_else(|e| panic!("SET {key} while its slot migrates: {e}"));
        let got: Option<String> = con
            .query(redis::cmd("GET").arg(key))
            .unwrap_or_else(|e| panic!("GET {key} while its slot migrates: {e}"));
        assert_eq!(got.as_deref(), Some(value.as_str()), "{key}");
        ran += 2;
    }
    ran
}

/// One acquisition and release of `lock` (its key and fence in the
/// migrating slot): the fence.
fn turn(con: &mut Connection, lock: &Lock) -> u64 {
    let lease = lock
        .acquire(Duration::from_secs(5))
        .run(con)
        .unwrap_or_else(|e| panic!("acquire of {}: {e}", lock.key()));
    assert_eq!(lock.release(&lease.token).run(con).unwrap(), Some(true));
    lease.fence
}

/// Moves the slot of `{rs}` from `from` to `to`, key by key, checking the
/// plain commands, the lock and a blocking acquire's deadline in between
/// (an acquire of a free lock cannot run while its slot migrates: the
/// absent lock key makes the source answer TRYAGAIN until the slot is
/// moved, so the turns are taken before and after).
fn move_slot(
    cluster: &LocalCluster,
    from: usize,
    to: usize,
    con: &mut Connection,
    fences: &mut Vec<u64>,
) {
    let lock = Lock::new("rs", Duration::from_secs(30)).unwrap();
    let slot = slot_of(cluster, lock.key());
    assert_eq!(slot, slot_of(cluster, "{rs}:here"));
    let (from_id, to_id) = (node_id(cluster, from), node_id(cluster, to));
    fences.push(turn(con, &lock));
    // Held while the slot migrates: both keys exist on the source.
    let held = lock.try_acquire().run(con).unwrap();
    setslot(cluster, to, slot, "IMPORTING", &from_id);
    setslot(cluster, from, slot, "MIGRATING", &to_id);
    plain_commands(con, 0);
    migrate(cluster, from, to, &["{rs}:moved"]);
    plain_commands(con, 1);
    assert!(
        lock.extend(&held.token, Duration::from_secs(30))
            .run(con)
            .unwrap()
    );
    // Half-migrated: the fence moved, the lock key stays. Every attempt
    // answers TRYAGAIN: a blocking acquire keeps its deadline.
    migrate(cluster, from, to, &[lock.fence_key()]);
    let timeout = Duration::from_millis(800);
    let started = Instant::now();
    let got = lock.acquire(timeout).run(con);
    let took = started.elapsed();
    println!(
        "acquire({timeout:?}) with the lock's keys split between two nodes: {} after {took:?}",
        match &got {
            Ok(l) => format!("fence {}", l.fence),
            Err(e) => e.to_string(),
        }
    );
    // Within its timeout and about a round trip; the margin is for a
    // loaded machine, not the bound (before, it took 2.5-4.4 s).
    assert!(
        took < timeout + Duration::from_secs(2),
        "acquire({timeout:?}) returned after {took:?}"
    );
    match got {
        Err(e) => assert!(
            e.is_retryable() || matches!(e.kind(), ErrorKind::LockTimeout { .. }),
            "{e}"
        ),
        Ok(l) => panic!("acquired a held lock: {l:?}"),
    }
    migrate(
        cluster,
        from,
        to,
        &[lock.key(), lock.queue_key(), lock.places_key(), "{rs}:here"],
    );
    // The lock moved, but its queue and places keys do not exist (nobody
    // waits): an importing node serves a multi-key call only when all its
    // keys are there, so the release is refused, retryable, and runs
    // nowhere until the slot settles.
    // (With the default policy it waits out TRYAGAIN for about 20 s; the
    // test asks for 1 s.)
    let policy = con.retry_policy();
    let short = RetryPolicy::builder()
        .deadline(Duration::from_secs(1))
        .build();
    con.set_retry_policy(short.unwrap());
    let started = Instant::now();
    let released = lock.release(&held.token).run(con);
    println!(
        "release with the lock moved and its queue keys absent: refused after {:?}",
        started.elapsed()
    );
    con.set_retry_policy(policy);
    match released {
        Err(e) => assert_eq!(
            e.server_kind(),
            Some(redis_patterns::ServerErrorKind::TryAgain),
            "release on a half-migrated slot: {e}"
        ),
        Ok(released) => panic!("released while the slot migrates: {released:?}"),
    }
    let owner: Option<String> = con.query(redis::cmd("GET").arg(lock.key())).unwrap();
    assert_eq!(
        owner.as_deref(),
        Some(held.token.as_str()),
        "still held (ASK)"
    );
    plain_commands(con, 2);
    // What else the source holds (on the way back, `{rs}:absent`, which
    // the first move created on this node), as redis-cli --cluster
    // reshard does: a source keeping keys cannot give the slot away.
    let left = keys_in_slot(cluster, from, slot);
    if !left.is_empty() {
        let left: Vec<&str> = left.iter().map(String::as_str).collect();
        migrate(cluster, from, to, &left);
    }
    let left = keys_in_slot(cluster, from, slot);
    assert!(left.is_empty(), "left on the source: {left:?}");
    // The target first, then the source, then the others (as redis-cli
    // --cluster reshard does).
    let others = (0..cluster.nodes().len()).filter(|&n| n != to && n != from);
    for n in [to, from].into_iter().chain(others) {
        setslot(cluster, n, slot, "NODE", &to_id);
    }
    assert_eq!(
        lock.release(&held.token).run(con).unwrap(),
        Some(true),
        "released on the target once the slot settled (MOVED)"
    );
    plain_commands(con, 3);
    fences.push(turn(con, &lock));
}

#[test]
fn plain_commands_and_scripts_follow_a_slot_that_migrates_away_and_back() {
    let cluster = support::cluster();
    let mut con = support::connect(&cluster.nodes()[0].url());
    let from = support::owner(&cluster, "{rs}");
    let to = (from + 1) % cluster.nodes().len();
    let mut fences = Vec::new();
    move_slot(&cluster, from, to, &mut con, &mut fences);
    move_slot(&cluster, to, from, &mut con, &mut fences);
    assert!(
        fences.windows(2).all(|w| w[0] < w[1]),
        "fencing tokens increase across the moves: {fences:?}"
    );
    assert_eq!(support::owner(&cluster, "{rs}"), from, "the slot is back");
    for key in ["{rs}:here", "{rs}:moved", "{rs}:absent"] {
        let got: Option<String> = con.query(redis::cmd("GET").arg(key)).unwrap();
        assert_eq!(got.as_deref(), Some("3"), "{key}: the last write, once");
    }
}

/// The keys of `slot` on node `n` (at most 1000).
fn keys_in_slot(cluster: &LocalCluster, n: usize, slot: u16) -> Vec<String> {
    redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(1000)
        .query(&mut cluster.nodes()[n].connection())
        .unwrap()
}

/// Moves `slot` from `from` to `to` one key at a time, `pause` between
/// keys (so calls meet every half-migrated state), while clients call.
fn move_under_load(cluster: &LocalCluster, slot: u16, from: usize, to: usize, pause: Duration) {
    let (from_id, to_id) = (node_id(cluster, from), node_id(cluster, to));
    setslot(cluster, to, slot, "IMPORTING", &from_id);
    setslot(cluster, from, slot, "MIGRATING", &to_id);
    loop {
        let keys = keys_in_slot(cluster, from, slot);
        let Some(key) = keys.first() else { break };
        migrate(cluster, from, to, &[key.as_str()]);
        std::thread::sleep(pause);
    }
    let others = (0..cluster.nodes().len()).filter(|&n| n != to && n != from);
    for n in [to, from].into_iter().chain(others) {
        setslot(cluster, n, slot, "NODE", &to_id);
    }
}

/// What the lock's client saw: fencing tokens in order, turns completed
/// (the counter it keeps with plain `GET` / `SET` under the lock), and each
/// blocking acquire that timed out with how long it took.
#[derive(Default)]
struct LockTally {
    fences: Vec<u64>,
    turns: i64,
    timeouts: Vec<Duration>,
    longest: Duration,
}

/// Turns of `lock` until `stop`: a blocking acquire of `timeout`, a
/// counter incremented with plain commands through `query` (not atomic:
/// only the lock keeps it right), a release. Panics on any other error.
fn lock_turns(url: &str, lock: &Lock, timeout: Duration, stop: &AtomicBool) -> LockTally {
    let mut con = support::connect(url);
    let counter = format!("{}:counter", lock.key());
    let mut t = LockTally::default();
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let got = lock.acquire(timeout).run(&mut con);
        let took = started.elapsed();
        t.longest = t.longest.max(took);
        let lease = match got {
            Ok(lease) => lease,
            // Its keys split between two nodes: every attempt answered
            // TRYAGAIN until its deadline.
            Err(e)
                if matches!(e.kind(), ErrorKind::LockTimeout { .. })
                    || e.server_kind() == Some(redis_patterns::ServerErrorKind::TryAgain) =>
            {
                t.timeouts.push(took);
                continue;
            }
            Err(e) => panic!("acquire while slots move: {e}"),
        };
        let n: Option<i64> = con
            .query(redis::cmd("GET").arg(&counter))
            .unwrap_or_else(|e| panic!("GET {counter} while slots move: {e}"));
        let _: () = con
            .query(redis::cmd("SET").arg(&counter).arg(n.unwrap_or(0) + 1))
            .unwrap_or_else(|e| panic!("SET {counter} while slots move: {e}"));
        let released = lock.release(&lease.token).run(&mut con);
        assert!(
            matches!(released, Ok(Some(true)) | Ok(None)),
            "release while slots move: {released:?}"
        );
        t.fences.push(lease.fence);
        t.turns += 1;
    }
    t
}

/// Visits of `day` until `stop` (members 0, 1, 2 …) on an async
/// connection: the members acknowledged. Panics on an error.
fn visit_adds(url: &str, visits: &VisitCounter<chrono::Utc>, stop: &AtomicBool) -> Vec<i64> {
    let mut d = support::drivers(url).pop().expect("the async driver");
    let mut acked = Vec::new();
    let mut m = 0;
    while !stop.load(Ordering::SeqCst) {
        d.run(visits.add(day(), m))
            .unwrap_or_else(|e| panic!("visit {m} while slots move: {e}"));
        acked.push(m);
        m += 1;
    }
    acked
}

/// Plain `SET` / `GET` pairs through `query` on keys of the lock's slot
/// (new ones, so some land on each side of the migration) until `stop`:
/// how many pairs ran. Panics on an error or a value read back wrong.
fn plain_pairs(url: &str, tag: &str, stop: &AtomicBool) -> usize {
    let mut con = support::connect(url);
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let key = format!("{{{tag}}}:plain:{}", n % 8);
        let _: () = con
            .query(redis::cmd("SET").arg(&key).arg(n))
            .unwrap_or_else(|e| panic!("SET {key} while slots move: {e}"));
        let got: Option<usize> = con
            .query(redis::cmd("GET").arg(&key))
            .unwrap_or_else(|e| panic!("GET {key} while slots move: {e}"));
        assert_eq!(got, Some(n), "{key}");
        n += 1;
    }
    n
}

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2100, 1, 1).unwrap()
}

/// Under load, the slot of a lock (its key, its fence and a counter kept
/// under it) and the slot of a day's visits (a multi-key script: counter,
/// shards, meta) move to another node and back, key by key: every plain
/// command and every script succeeds (`ASK` followed, `TRYAGAIN` waited
/// out while a script's keys are split), no acknowledged visit is lost or
/// counted twice, no increment under the lock is lost, fencing tokens
/// increase, and a blocking acquire returns within its timeout and about
/// a round trip (printed; asserted with a generous margin for a loaded
/// machine).
#[test]
fn slots_move_away_and_back_under_load_and_nothing_is_lost_or_doubled() {
    let cluster = support::cluster();
    let url = cluster.nodes()[0].url();
    let lock = Lock::new("rl", Duration::from_secs(30)).unwrap();
    let visits = VisitCounter::builder("rv", chrono::Utc, 4)
        .retention(redis_patterns::Retention::Forever)
        .build()
        .unwrap();
    let lock_slot = slot_of(&cluster, lock.key());
    assert_eq!(lock_slot, slot_of(&cluster, lock.fence_key()));
    let visits_slot = slot_of(&cluster, &visits.counter_key(day()));
    let timeout = Duration::from_millis(300);
    let stop = AtomicBool::new(false);
    let pause = Duration::from_millis(60);
    let (tally, acked, pairs) = std::thread::scope(|s| {
        let locks = s.spawn(|| lock_turns(&url, &lock, timeout, &stop));
        let adds = s.spawn(|| visit_adds(&url, &visits, &stop));
        let plain = s.spawn(|| plain_pairs(&url, "rl", &stop));
        std::thread::sleep(Duration::from_millis(300));
        for slot in [lock_slot, visits_slot] {
            let key = if slot == lock_slot {
                lock.key().to_string()
            } else {
                visits.counter_key(day())
            };
            let from = support::owner(&cluster, &key);
            let to = (from + 1) % cluster.nodes().len();
            move_under_load(&cluster, slot, from, to, pause);
            std::thread::sleep(Duration::from_millis(200));
            move_under_load(&cluster, slot, to, from, pause);
        }
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        (
            locks.join().expect("the lock's client"),
            adds.join().expect("the visits' client"),
            plain.join().expect("the plain client"),
        )
    });
    let mut con = support::connect(&url);
    let count = visits.count(day()).run(&mut con).unwrap();
    let members: u64 = visits
        .shard_sizes(day())
        .run(&mut con)
        .unwrap()
        .iter()
        .sum();
    let present = Op::join(acked.iter().map(|&m| visits.contains(day(), m)).collect())
        .run(&mut con)
        .unwrap();
    let lost = present.iter().filter(|p| !**p).count();
    let counter: Option<i64> = con
        .query(redis::cmd("GET").arg(format!("{}:counter", lock.key())))
        .unwrap();
    let repeated = tally.fences.windows(2).filter(|w| w[0] >= w[1]).count();
    println!(
        "resharding under load: visits attempted {n} succeeded {n} lost {lost} counted twice {twice}; \
         lock turns {turns} (counter {counter:?}), fences repeated or back {repeated}, \
         {timeouts} acquire({timeout:?}) timed out (longest call {longest:?}); plain SET/GET pairs {pairs}",
        n = acked.len(),
        twice = count.saturating_sub(members),
        turns = tally.turns,
        timeouts = tally.timeouts.len(),
        longest = tally.longest,
    );
    assert_eq!(lost, 0, "acknowledged visits lost");
    assert_eq!(count, acked.len() as u64, "counted once each");
    assert_eq!(members, acked.len() as u64, "stored once each");
    assert_eq!(
        counter.unwrap_or(0),
        tally.turns,
        "no increment under the lock lost"
    );
    assert_eq!(repeated, 0, "fencing tokens increase: {:?}", tally.fences);
    assert!(tally.turns > 0 && pairs > 0 && !acked.is_empty());
    // Within its timeout and about a round trip; the margin is for a
    // loaded machine, not the bound.
    assert!(
        tally.longest < timeout + Duration::from_secs(2),
        "a blocking acquire({timeout:?}) took {:?}",
        tally.longest
    );
}
