//! The script bundle against real servers: SHAs, export, redis-cli,
//! NOSCRIPT recovery (single calls and pipelines, sync and async), read-only
//! scripts on a replica, and a real Redis Cluster.

mod support;

use std::path::{Path, PathBuf};

use redis_patterns::fanout::{Batch, Topology};
use redis_patterns::scripts::{self, ALL};
use redis_patterns::{Error, ErrorKind, Request, ScriptPipeline, load_all};

fn sha1_of(bytes: &[u8]) -> String {
    redis::Script::new(std::str::from_utf8(bytes).expect("scripts are UTF-8"))
        .get_hash()
        .to_string()
}

fn lua_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("lua")
}

fn script_flush(con: &mut redis::Connection) {
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(con)
        .expect("SCRIPT FLUSH");
}

fn script_exists(con: &mut redis::Connection, sha: &str) -> bool {
    let v: Vec<i64> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(sha)
        .query(con)
        .expect("SCRIPT EXISTS");
    v == [1]
}

#[test]
fn every_sha_is_the_sha1_of_its_file_and_the_servers() {
    let server = support::server();
    let mut con = server.connection();
    let on_disk: Vec<PathBuf> = std::fs::read_dir(lua_dir())
        .expect("list lua/")
        .flat_map(|d| std::fs::read_dir(d.expect("entry").path()).expect("pattern dir"))
        .map(|f| f.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "lua"))
        .collect();
    assert_eq!(
        on_disk.len(),
        ALL.len(),
        "every file under lua/ is registered"
    );
    for s in ALL {
        let bytes = std::fs::read(lua_dir().join(s.file)).expect("script file");
        assert_eq!(
            s.source().as_bytes(),
            bytes.as_slice(),
            "{} embedded byte for byte",
            s.name
        );
        assert_eq!(s.sha1, sha1_of(&bytes), "{}", s.name);
        let server_sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(&bytes)
            .query(&mut con)
            .expect("SCRIPT LOAD");
        assert_eq!(server_sha, s.sha1, "{}", s.name);
    }
    script_flush(&mut con);
    let loaded = load_all()
        .run(&mut redis_patterns::Connection::open(server.url()).expect("connect"))
        .expect("load_all");
    assert_eq!(loaded.len(), ALL.len());
    for ((name, sha), s) in loaded.iter().zip(ALL) {
        assert_eq!((*name, *sha), (s.name, s.sha1));
        assert!(script_exists(&mut con, sha));
    }
}

#[test]
fn every_error_code_maps_to_a_typed_variant() {
    // (That every declared code has a typed kind is a unit test in
    // src/error.rs.) The mapping is what a caller sees: bypass the Rust
    // validation.
    let server = support::server();
    let mut con = server.connection();
    let err = scripts::lock::acquire("l{x}", "l{x}:fence", "t", 0)
        .invoke(&mut con)
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::InvalidArgument {
                script: Some("lock.acquire"),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("script lock.acquire: invalid lease_ms: must be"),
        "{err}"
    );
    assert_eq!(support::dbsize(&mut con), 0);
}

#[test]
fn a_single_call_survives_script_flush() {
    let server = support::server();
    let mut con = server.connection();
    let call = scripts::lock::acquire("l{a}", "l{a}:fence", "t1", 10_000);
    assert_eq!(call.invoke(&mut con).expect("first call"), 1);
    script_flush(&mut con);
    assert!(!script_exists(&mut con, scripts::LOCK_RELEASE.sha1));
    assert_eq!(
        scripts::lock::release("l{a}", "t1")
            .invoke(&mut con)
            .expect("after flush"),
        1
    );
    assert!(
        script_exists(&mut con, scripts::LOCK_RELEASE.sha1),
        "reloaded by SCRIPT LOAD"
    );
    assert_eq!(call.invoke(&mut con).expect("again"), 2);
}

/// Six acquire/release rounds on one lock, interleaved with `owned` checks:
/// each reply depends on the calls before it having run once, in order.
fn ordered_batch(key: &str, fence: &str) -> (ScriptPipeline, Vec<i64>) {
    let mut pipe = ScriptPipeline::new();
    let mut expected = Vec::new();
    for round in 0..6 {
        let token = format!("tok-{round}");
        pipe.add(&scripts::lock::acquire(key, fence, &token, 60_000));
        expected.push(round + 1); // the fencing token counts acquisitions
        pipe.add(&scripts::lock::release(key, "someone-else"));
        expected.push(0);
        pipe.add(&scripts::lock::release(key, &token));
        expected.push(1);
    }
    (pipe, expected)
}

#[test]
fn a_pipeline_after_script_flush_runs_every_call_once_in_order() {
    let server = support::server();
    let mut con = server.connection();
    let (pipe, expected) = ordered_batch("l{p}", "l{p}:fence");
    assert!(pipe.len() >= 10);
    script_flush(&mut con);
    let replies: Vec<i64> = pipe.query(&mut con).expect("pipeline after flush");
    assert_eq!(replies, expected);
    let fence: i64 = redis::cmd("GET")
        .arg("l{p}:fence")
        .query(&mut con)
        .expect("GET");
    assert_eq!(fence, 6, "no acquire ran twice");
    // Once more with everything cached: fencing tokens go on from 7.
    let again: Vec<i64> = pipe.query(&mut con).expect("cached pipeline");
    let shifted: Vec<i64> = expected
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 3 == 0 { v + 6 } else { v })
        .collect();
    assert_eq!(again, shifted);
}

#[test]
fn a_pipeline_that_cannot_keep_order_stops_without_running_anything_twice() {
    let server = support::server();
    let mut con = server.connection();
    script_flush(&mut con);
    // Only acquire is cached: release answers NOSCRIPT while later acquires run.
    scripts::LOCK_ACQUIRE.load(&mut con).expect("load acquire");
    let mut pipe = ScriptPipeline::new();
    pipe.add(&scripts::lock::acquire("l{q}", "l{q}:fence", "a", 60_000));
    pipe.add(&scripts::lock::release("l{q}", "a"));
    pipe.add(&scripts::lock::acquire("l{r}", "l{r}:fence", "b", 60_000));
    let err = pipe.query::<i64>(&mut con).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::PipelineInterrupted {
                ran_in_order: 1,
                total: 3
            }
        ),
        "{err:?}"
    );
    let fences: (i64, i64) = redis::pipe()
        .get("l{q}:fence")
        .get("l{r}:fence")
        .query(&mut con)
        .expect("GET");
    assert_eq!(fences, (1, 1), "each acquire ran exactly once");
}

#[test]
fn domain_errors_stay_in_their_pipeline_slot() {
    let server = support::server();
    let mut con = server.connection();
    let mut pipe = ScriptPipeline::new();
    pipe.add(&scripts::lock::acquire("l{e}", "l{e}:fence", "a", 1_000));
    pipe.add(&scripts::lock::acquire("l{f}", "l{f}:fence", "b", 0));
    pipe.add(&scripts::lock::acquire("l{g}", "l{g}:fence", "c", 1_000));
    let values = pipe.query_values(&mut con).expect("pipeline");
    let each: Vec<redis_patterns::Result<i64>> = redis_patterns::script::decode_each(&pipe, values);
    assert_eq!(each[0].as_ref().ok(), Some(&1));
    assert!(matches!(
        each[1].as_ref().map_err(Error::kind),
        Err(ErrorKind::InvalidArgument {
            script: Some(_),
            ..
        })
    ));
    assert_eq!(each[2].as_ref().ok(), Some(&1));
    assert!(matches!(
        pipe.query::<i64>(&mut con).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument {
            script: Some(_),
            ..
        })
    ));
}

#[test]
fn read_only_scripts_use_evalsha_ro_and_run_on_a_replica() {
    let primary = support::server();
    let replica = support::server_with(&["--replicaof", "127.0.0.1", &primary.port().to_string()]);
    let mut p = primary.connection();
    let mut r = replica.connection();
    let token = "owner";
    assert!(
        scripts::lock::acquire("l{ro}", "l{ro}:fence", token, 60_000)
            .invoke(&mut p)
            .expect("acquire")
            > 0
    );
    // Wait for the replica to have the key (replication is asynchronous).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !redis::cmd("EXISTS")
        .arg("l{ro}")
        .query::<bool>(&mut r)
        .expect("EXISTS")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "replica never caught up:\n{}",
            replica.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let owned = scripts::lock::owned("l{ro}", token);
    assert!(String::from_utf8_lossy(&owned.cmd().get_packed_command()).contains("EVALSHA_RO"));
    let left = owned
        .invoke(&mut r)
        .expect("EVALSHA_RO on the replica (loads it there first)");
    assert!(left > 0 && left <= 60_000, "{left}");
    assert_eq!(
        scripts::lock::owned("l{ro}", "intruder")
            .invoke(&mut r)
            .expect("ro"),
        0
    );
    // A writing script is refused by the replica.
    let err = scripts::lock::release("l{ro}", token)
        .invoke(&mut r)
        .unwrap_err();
    assert!(
        err.to_string().to_uppercase().contains("READONLY")
            || err.to_string().contains("read only"),
        "{err}"
    );
}

#[test]
fn async_connections_recover_from_script_flush() {
    let server = support::server();
    let rt = support::runtime();
    rt.block_on(async {
        let (mut mux, mut mgr) = support::async_connections(&server).await;
        let mut sync = server.connection();
        script_flush(&mut sync);
        let fence = scripts::lock::acquire("l{m}", "l{m}:fence", "t", 60_000)
            .invoke_async(&mut mux)
            .await
            .expect("mux");
        assert_eq!(fence, 1);
        script_flush(&mut sync);
        let released = scripts::lock::release("l{m}", "t")
            .invoke_async(&mut mgr)
            .await
            .expect("manager");
        assert_eq!(released, 1);
        script_flush(&mut sync);
        let (pipe, expected) = ordered_batch("l{n}", "l{n}:fence");
        let replies: Vec<i64> = pipe
            .query_async(&mut mgr)
            .await
            .expect("async pipeline after flush");
        assert_eq!(replies, expected);
        let mut acon = redis_patterns::AsyncConnection::from_multiplexed(mux.clone())
            .await
            .expect("wrap");
        let loaded = load_all().run_async(&mut acon).await.expect("load_all");
        assert_eq!(loaded.len(), ALL.len());
    });
}

#[test]
fn scripts_run_unchanged_on_a_real_cluster() {
    let cluster = support::cluster();
    let client = cluster.client();
    let mut con = client.get_connection().expect("cluster connection");
    let mut node = cluster.nodes()[0].connection();
    for key in [
        "foo",
        "{user1000}.following",
        "foo{}{bar}",
        "foo{{bar}}zap",
        "l{a}:fence",
        "x{}",
    ] {
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut node)
            .expect("KEYSLOT");
        assert_eq!(
            redis_patterns::keys::cluster_slot(key.as_bytes()),
            slot,
            "{key}"
        );
    }
    // Locks whose tags hash to different slots, so calls go to different nodes.
    let names = ["a", "b", "c", "d", "e", "f"];
    let slots: std::collections::BTreeSet<u16> = names
        .iter()
        .map(|n| redis_patterns::keys::cluster_slot(format!("l{{{n}}}").as_bytes()) / 5462)
        .collect();
    assert!(slots.len() >= 2, "test keys must span nodes");
    for n in names {
        let (key, fence) = (format!("l{{{n}}}"), format!("l{{{n}}}:fence"));
        assert_eq!(
            scripts::lock::acquire(&key, &fence, "t", 60_000)
                .invoke(&mut con)
                .expect("acquire on cluster"),
            1
        );
        assert!(
            scripts::lock::owned(&key, "t")
                .invoke(&mut con)
                .expect("owned")
                > 0
        );
    }
    let loaded = load_all()
        .run(&mut redis_patterns::Connection::from_cluster(
            client.get_connection().expect("cluster connection"),
        ))
        .expect("load_all on a cluster connection");
    assert_eq!(loaded.len(), ALL.len());
    for node in cluster.nodes() {
        assert!(
            script_exists(&mut node.connection(), scripts::LOCK_ACQUIRE.sha1),
            "loaded on every node"
        );
    }
    // SCRIPT FLUSH on every node, then the wrappers reload where needed.
    for node in cluster.nodes() {
        script_flush(&mut node.connection());
    }
    for n in names {
        assert_eq!(
            scripts::lock::release(&format!("l{{{n}}}"), "t")
                .invoke(&mut con)
                .expect("release after flush"),
            1
        );
    }
    let rt = support::runtime();
    rt.block_on(async {
        let mut acon = client
            .get_async_connection()
            .await
            .expect("async cluster connection");
        for node in cluster.nodes() {
            script_flush(&mut node.connection());
        }
        for n in names {
            let (key, fence) = (format!("l{{{n}}}"), format!("l{{{n}}}:fence"));
            let v = scripts::lock::acquire(&key, &fence, "u", 60_000)
                .invoke_async(&mut acon)
                .await
                .expect("async acquire");
            assert_eq!(v, 2);
        }
    });
    let total: i64 = cluster
        .nodes()
        .iter()
        .map(|n| support::dbsize(&mut n.connection()))
        .sum();
    assert_eq!(
        total, 12,
        "six locks with their fences, spread over the nodes"
    );

    // Batches that span slots: one pipeline per slot with Topology::Cluster.
    for node in cluster.nodes() {
        script_flush(&mut node.connection());
    }
    let mut pipe = ScriptPipeline::new();
    pipe.topology(Topology::Cluster);
    for n in names {
        pipe.add(&scripts::lock::release(&format!("l{{{n}}}"), "u"));
        pipe.add(&scripts::lock::acquire(
            &format!("l{{{n}}}"),
            &format!("l{{{n}}}:fence"),
            "w",
            60_000,
        ));
    }
    let replies: Vec<i64> = pipe
        .query(&mut con)
        .expect("cross-slot script pipeline on a cluster");
    assert_eq!(
        replies,
        names.iter().flat_map(|_| [1, 3]).collect::<Vec<i64>>()
    );
    let mut batch = Batch::new();
    for n in names {
        let key = format!("l{{{n}}}:fence");
        batch.add(&key, redis::cmd("GET").arg(&key).clone());
    }
    let fences: Vec<i64> = batch
        .query(&mut con, Topology::Cluster)
        .expect("cross-slot batch");
    assert_eq!(fences, vec![3; names.len()]);
    // redis-rs's sync cluster connection cannot pipeline: a Batch goes one
    // command at a time there, whatever the topology.
    let one_by_one: Vec<i64> = batch
        .query(&mut con, Topology::Standalone)
        .expect("one at a time");
    assert_eq!(one_by_one, fences);
    // There, as in a pipeline, an error reply stays in its slot and the later
    // commands still run.
    let mut mixed = ScriptPipeline::new();
    mixed.add(&scripts::lock::acquire("l{m1}", "l{m1}:fence", "x", 60_000));
    mixed.add(&scripts::lock::acquire("l{m2}", "l{m2}:fence", "x", 0));
    mixed.add(&scripts::lock::acquire("l{m3}", "l{m3}:fence", "x", 60_000));
    let values = mixed.query_values(&mut con).expect("one call at a time");
    let each: Vec<redis_patterns::Result<i64>> =
        redis_patterns::script::decode_each(&mixed, values);
    assert_eq!(each[0].as_ref().ok(), Some(&1));
    assert!(
        matches!(
            each[1].as_ref().map_err(Error::kind),
            Err(ErrorKind::InvalidArgument {
                script: Some(_),
                ..
            })
        ),
        "{:?}",
        each[1]
    );
    assert_eq!(
        each[2].as_ref().ok(),
        Some(&1),
        "the call after the error ran"
    );
    let mut wrong = Batch::new();
    wrong.add("l{a}", redis::cmd("HGET").arg("l{a}").arg("f").clone());
    wrong.add("l{b}:fence", redis::cmd("GET").arg("l{b}:fence").clone());
    let values = wrong
        .query_values(&mut con, Topology::Cluster)
        .expect("batch");
    assert!(
        matches!(&values[0], redis::Value::ServerError(e) if e.code() == "WRONGTYPE"),
        "{values:?}"
    );
    assert_eq!(
        redis::from_redis_value::<i64>(values[1].clone()).expect("int"),
        3
    );
    let rt = support::runtime();
    rt.block_on(async {
        let mut acon = client
            .get_async_connection()
            .await
            .expect("async cluster connection");
        for node in cluster.nodes() {
            script_flush(&mut node.connection());
        }
        let loaded = load_all()
            .run_async(&mut redis_patterns::AsyncConnection::from_cluster(
                acon.clone(),
            ))
            .await
            .expect("load_all on an async cluster connection");
        assert_eq!(loaded.len(), ALL.len());
        for node in cluster.nodes() {
            let mut n = node.connection();
            assert!(
                ALL.iter().all(|s| script_exists(&mut n, s.sha1)),
                "every script on every node"
            );
        }
        let mut pipe = ScriptPipeline::new();
        pipe.topology(Topology::Cluster);
        for n in names {
            pipe.add(&scripts::lock::owned(&format!("l{{{n}}}"), "w"));
        }
        let left: Vec<i64> = pipe
            .query_async(&mut acon)
            .await
            .expect("async cross-slot pipeline");
        assert!(left.iter().all(|&ms| ms > 0), "{left:?}");
        let mut flat = ScriptPipeline::new();
        for n in names {
            flat.add(&scripts::lock::owned(&format!("l{{{n}}}"), "w"));
        }
        assert!(
            flat.query_async::<i64, _>(&mut acon).await.is_err(),
            "one cross-slot pipeline is refused"
        );
    });
}
