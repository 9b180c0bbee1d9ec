//! Live resharding on a real three-node cluster: the slot of a lock (its
//! key and its fence) and of a few plain keys moves to another node and
//! back (`CLUSTER SETSLOT ... IMPORTING / MIGRATING`, `MIGRATE`, `SETSLOT
//! ... NODE`), key by key, while the slot is half-migrated: plain commands
//! sent through `Connection::query` (the router's path) follow `ASK` with
//! `ASKING` like the scripts do, a script whose two keys are split between
//! the nodes waits out `TRYAGAIN`, nothing is lost or applied twice, and a
//! blocking `acquire(timeout)` returns within its timeout and a round trip
//! even while every attempt answers `TRYAGAIN`.

mod support;

use std::time::{Duration, Instant};

use redis_patterns::lock::Lock;
use redis_patterns::{Connection, ErrorKind, Request};
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
    assert!(
        took < timeout + Duration::from_millis(500),
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
    assert_eq!(
        lock.release(&held.token).run(con).unwrap(),
        Some(true),
        "released on the target (ASK)"
    );
    plain_commands(con, 2);
    // The target first, then the source, then the others (as redis-cli
    // --cluster reshard does).
    let others = (0..cluster.nodes().len()).filter(|&n| n != to && n != from);
    for n in [to, from].into_iter().chain(others) {
        setslot(cluster, n, slot, "NODE", &to_id);
    }
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
