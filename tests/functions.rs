//! The Functions library and the functions call mode against real servers:
//! the library loads with one function per script (read-only ones flagged
//! `no-writes`), calls reload it after `FUNCTION FLUSH` and run once and in
//! order (one server and a cluster, both drivers), a library that lacks a
//! function stops a batch without running anything twice, functions outlive
//! a restart where the script cache does not, `FCALL_RO` runs on replicas,
//! and `functions::load` reaches every primary of a cluster (and its
//! replicas, by replication). Every test here runs in functions mode,
//! whatever `REDIS_PATTERNS_CALL_MODE` says.

#[path = "support/batches.rs"]
mod batches;
mod support;

use std::time::{Duration, Instant};

use batches::{lock_rounds, stops_after_the_first_call};
use redis::Value;
use redis_patterns::core::CallMode;
use redis_patterns::scripts::{self, ALL};
use redis_patterns::{Batch, ServerErrorKind, functions};
use redis_patterns_test_support::{LocalCluster, LocalServer};
use support::{Driver, key_on};

const MODE: CallMode = CallMode::Functions;

/// The functions of the library `redis_patterns` as `FUNCTION LIST` gives
/// them: `(name, flags)`, sorted by name.
fn function_list(con: &mut redis::Connection) -> Vec<(String, Vec<String>)> {
    let reply: Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg(functions::NAME)
        .query(con)
        .expect("FUNCTION LIST");
    let text = |v: &Value| redis::from_redis_value::<String>(v.clone()).expect("a string");
    let pairs = |v: &Value| -> Vec<(String, Value)> {
        match v {
            Value::Array(items) => items
                .chunks(2)
                .map(|kv| (text(&kv[0]), kv[1].clone()))
                .collect(),
            Value::Map(items) => items.iter().map(|(k, v)| (text(k), v.clone())).collect(),
            other => panic!("unexpected FUNCTION LIST shape: {other:?}"),
        }
    };
    let Value::Array(libraries) = reply else {
        panic!("FUNCTION LIST answers an array");
    };
    let mut out = Vec::new();
    for library in &libraries {
        let fields = pairs(library);
        let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        assert_eq!(
            field("library_name").map(text).as_deref(),
            Some(functions::NAME)
        );
        let Some(Value::Array(list)) = field("functions") else {
            panic!("a library lists its functions");
        };
        for f in list {
            let f = pairs(f);
            let get = |name: &str| f.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let name = text(&get("name").expect("a name"));
            let flags: Vec<String> = match get("flags") {
                Some(Value::Array(flags)) | Some(Value::Set(flags)) => {
                    flags.iter().map(text).collect()
                }
                _ => Vec::new(),
            };
            out.push((name, flags));
        }
    }
    out.sort();
    out
}

/// Every script of the registry is a function, flagged `no-writes` exactly
/// when the script is read-only.
fn assert_complete(con: &mut redis::Connection, node: &str) {
    let list = function_list(con);
    assert_eq!(list.len(), ALL.len(), "{node}: one function per script");
    for s in ALL {
        let (_, flags) = list
            .iter()
            .find(|(name, _)| name == s.function)
            .unwrap_or_else(|| panic!("{node}: no function {}", s.function));
        let want: &[&str] = if s.read_only { &["no-writes"] } else { &[] };
        assert_eq!(flags, want, "{node}: flags of {}", s.function);
    }
}

fn flush_functions(con: &mut redis::Connection) {
    support::command_ok(con, &["FUNCTION", "FLUSH"]);
}

/// `calls` of `cmdstat_<name>` in `INFO commandstats` (0 when absent).
fn calls(con: &mut redis::Connection, name: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(con)
        .expect("INFO commandstats");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn reset_stats(con: &mut redis::Connection) {
    support::command_ok(con, &["CONFIG", "RESETSTAT"]);
}

#[test]
fn the_library_loads_with_one_function_per_script() {
    support::on_server_with_connection_in(MODE, |d, con| {
        flush_functions(con);
        let loaded = d.run(functions::load()).expect("FUNCTION LOAD REPLACE");
        let expected: Vec<(&str, &str)> = ALL.iter().map(|s| (s.name, s.function)).collect();
        assert_eq!(loaded, expected, "{}", d.name());
        assert_complete(con, "the server");
        // Loading again replaces it: still one function per script.
        d.run(functions::load()).expect("replace");
        assert_complete(con, "the server, replaced");
    });
}

/// After the library is deleted a single call and a batch load it again
/// and run every call once, in order.
fn reload_after_flush(d: &mut Driver, flush: &dyn Fn()) {
    flush();
    let fence = d
        .run(support::lock_acquire("f{a}", "t", 60_000))
        .expect("a call loads the library");
    assert_eq!(fence, 1, "{}", d.name());
    flush();
    assert_eq!(d.run(support::lock_release("f{a}", "t")).expect("again"), 1);
    flush();
    let mut batch = Batch::new();
    let mut expected = Vec::new();
    for tag in ["b", "c", "d", "e", "f", "g"] {
        let (b, e) = lock_rounds(&format!("f{{{tag}}}"), 3);
        batch.append(b);
        expected.extend(e);
    }
    let replies: Vec<i64> = d.run(batch).expect("batch").all().expect("replies");
    assert_eq!(replies, expected, "{}", d.name());
    // Read-only calls too (FCALL_RO).
    flush();
    let left = d
        .run(scripts::lock::owned("f{a}", "nobody"))
        .expect("FCALL_RO loads the library");
    assert_eq!(left, 0);
}

#[test]
fn calls_reload_the_library_after_function_flush() {
    let server = support::server();
    support::each_driver_in(&server, MODE, |d| {
        let mut con = server.connection();
        reset_stats(&mut con);
        reload_after_flush(d, &|| flush_functions(&mut server.connection()));
        assert!(calls(&mut con, "fcall") > 0, "{}", d.name());
        assert_eq!(calls(&mut con, "evalsha"), 0, "{}", d.name());
        assert_eq!(
            calls(&mut con, "function|load"),
            4,
            "{}: one load per flush",
            d.name()
        );
        assert_complete(&mut con, "the server");
    });
    let cluster = support::cluster();
    support::each_cluster_driver_in(&cluster, MODE, |d| {
        reload_after_flush(d, &|| {
            for n in cluster.nodes() {
                flush_functions(&mut n.connection());
            }
        });
        let fences: i64 = cluster
            .nodes()
            .iter()
            .map(|n| support::dbsize(&mut n.connection()))
            .sum();
        assert_eq!(fences, 7, "{}: one fence key per lock", d.name());
    });
}

#[test]
fn a_library_without_a_function_stops_a_batch_without_running_anything_twice() {
    support::on_server_with_connection_in(MODE, |d, con| {
        // A library of the same name that has lock_acquire but not
        // lock_release (as an older version might): release answers
        // "Function not found" while the later acquire runs.
        let partial = "#!lua name=redis_patterns\n\
            redis.register_function('lock_acquire', function(KEYS, ARGV) return redis.call('INCR', KEYS[2]) end)\n";
        let _: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(partial)
            .query(con)
            .expect("load the partial library");
        stops_after_the_first_call(d, con, "p");
        // A call on its own loads the whole library and runs.
        assert_eq!(d.run(support::lock_release("p{q}", "a")).unwrap(), 0);
        assert_complete(con, "the server");
    });
}

/// An AOF server, the library loaded and a lock taken through `mode`.
fn restart_and_release(mode: CallMode) -> (LocalServer, u64, u64) {
    let mut server = support::server_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut con = support::drivers_in(&server.url(), mode).remove(0);
    let fence = con
        .run(support::lock_acquire("r{a}", "t", 600_000))
        .expect("acquire");
    assert_eq!(fence, 1);
    drop(con);
    server.restart().expect("restart with the AOF");
    let mut raw = server.connection();
    reset_stats(&mut raw);
    for mut d in support::drivers_in(&server.url(), mode) {
        let owned = d
            .run(scripts::lock::owned("r{a}", "t"))
            .expect("owned after the restart");
        assert!(owned > 0, "{}: the lock came back with the AOF", d.name());
    }
    let loads = calls(&mut raw, "function|load");
    let script_loads = calls(&mut raw, "script|load");
    (server, loads, script_loads)
}

#[test]
fn functions_outlive_a_restart_where_the_script_cache_does_not() {
    // Functions mode: the library came back with the AOF, no load needed.
    let (server, loads, script_loads) = restart_and_release(MODE);
    assert_eq!((loads, script_loads), (0, 0));
    assert_complete(&mut server.connection(), "the restarted server");
    // EVALSHA mode: the script cache is empty after the restart, so the
    // first call answers NOSCRIPT and the script is loaded again.
    let (_server, loads, script_loads) = restart_and_release(CallMode::Evalsha);
    assert_eq!((loads, script_loads), (0, 1));
}

/// Waits until `check` holds, for at most ten seconds.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn read_only_functions_run_on_a_replica_which_cannot_load_the_library() {
    let primary = support::server();
    let replica = support::server_with(&["--replicaof", "127.0.0.1", &primary.port().to_string()]);
    let mut r = replica.connection();
    let mut p = support::drivers_in(&primary.url(), MODE).remove(0);
    // The first call loads the library on the primary; it replicates before
    // the key does.
    assert!(
        p.run(support::lock_acquire("ro{a}", "owner", 60_000))
            .expect("acquire")
            > 0
    );
    eventually("replication of the lock", || {
        redis::cmd("EXISTS")
            .arg("ro{a}")
            .query::<bool>(&mut r)
            .unwrap_or(false)
    });
    assert_complete(&mut r, "the replica");
    for mut d in support::drivers_in(&replica.url(), MODE) {
        let left = d
            .run(scripts::lock::owned("ro{a}", "owner"))
            .expect("FCALL_RO on the replica");
        assert!(left > 0 && left <= 60_000, "{left}");
        let err = d.run(support::lock_release("ro{a}", "owner")).unwrap_err();
        assert_eq!(
            err.server_kind(),
            Some(ServerErrorKind::ReadOnly),
            "{}: {err}",
            d.name()
        );
        assert_eq!(err.script(), Some("lock.release"));
    }
    // Without the library (deleted on the primary, so on the replica too)
    // the replica refuses to load it: typed, retryable (after a failover
    // the call reaches a primary).
    flush_functions(&mut primary.connection());
    eventually("replication of FUNCTION FLUSH", || {
        function_list(&mut r).is_empty()
    });
    for mut d in support::drivers_in(&replica.url(), MODE) {
        let err = d.run(scripts::lock::owned("ro{a}", "owner")).unwrap_err();
        assert_eq!(
            err.server_kind(),
            Some(ServerErrorKind::ReadOnly),
            "{}: {err}",
            d.name()
        );
        assert!(err.is_retryable());
    }
}

#[test]
fn load_reaches_every_primary_and_the_replicas_get_it() {
    let cluster = LocalCluster::builder()
        .replicas(1)
        .start()
        .expect("a cluster with replicas");
    let primaries = cluster.primaries();
    let replicas = cluster.replicas();
    assert_eq!((primaries.len(), replicas.len()), (3, 3));
    for mut d in support::drivers_in(&cluster.nodes()[0].url(), MODE) {
        for n in &primaries {
            flush_functions(&mut cluster.nodes()[*n].connection());
        }
        for n in &replicas {
            let mut con = cluster.nodes()[*n].connection();
            eventually("replication of FUNCTION FLUSH", || {
                function_list(&mut con).is_empty()
            });
        }
        d.run(functions::load()).expect("load on a cluster");
        for n in &primaries {
            assert_complete(
                &mut cluster.nodes()[*n].connection(),
                &format!("primary {n}"),
            );
        }
        for n in &replicas {
            let mut con = cluster.nodes()[*n].connection();
            eventually("replication of the library", || {
                function_list(&mut con).len() == ALL.len()
            });
            assert_complete(&mut con, &format!("replica {n}"));
        }
    }
    // FCALL_RO straight to each replica (READONLY: serve reads of the
    // primary's slots) runs there.
    for &n in &primaries {
        let key = key_on(&cluster.nodes()[n], "k");
        let mut con = cluster.nodes()[n].connection();
        let fence: i64 = redis::cmd("FCALL")
            .arg("lock_acquire")
            .arg(4)
            .arg(&key)
            .arg(format!("{key}:fence"))
            .arg(format!("{key}:queue"))
            .arg(format!("{key}:places"))
            .arg("tok")
            .arg(60_000)
            .arg(0) // place_ms 0
            .arg(0) // not fair
            .arg(0) // now_us 0: the fencing token counts acquisitions
            .query(&mut con)
            .expect("FCALL on the primary");
        assert_eq!(fence, 1);
    }
    for &n in &replicas {
        let mut con = cluster.nodes()[n].connection();
        let _: () = redis::cmd("READONLY").query(&mut con).expect("READONLY");
        let served = primaries
            .iter()
            .filter(|&&p| {
                let key = key_on(&cluster.nodes()[p], "k");
                let (mut left, mut moved) = (0, false);
                eventually("replication of the lock", || {
                    match redis::cmd("FCALL_RO")
                        .arg("lock_owned")
                        .arg(1)
                        .arg(&key)
                        .arg("tok")
                        .query::<i64>(&mut con)
                    {
                        Ok(v) => {
                            left = v;
                            v > 0
                        }
                        Err(e) if e.code() == Some("MOVED") => {
                            moved = true;
                            true
                        }
                        Err(e) => panic!("FCALL_RO on replica {n}: {e}"),
                    }
                });
                !moved && left > 0
            })
            .count();
        assert_eq!(served, 1, "replica {n} runs FCALL_RO on its primary's keys");
    }
}
