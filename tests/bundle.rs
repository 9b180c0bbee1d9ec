//! The script bundle against real servers: SHAs, error mapping, NOSCRIPT
//! recovery (single calls and batches, through both drivers), read-only
//! scripts on a replica, and a real Redis Cluster. The `NOSCRIPT` tests run
//! in `EVALSHA` mode; their functions-mode twins are in `tests/functions.rs`.

#[path = "support/batches.rs"]
mod batches;
#[path = "support/examples.rs"]
mod examples;
mod support;

use std::path::{Path, PathBuf};

use batches::{lock_rounds, stops_after_the_first_call};
use redis_patterns::core::CallMode;
use redis_patterns::scripts::{self, ALL};
use redis_patterns::{Batch, Error, ErrorKind, Request, load_all};
use support::Driver;

fn sha1_of(bytes: &[u8]) -> String {
    redis::Script::new(std::str::from_utf8(bytes).expect("scripts are UTF-8"))
        .get_hash()
        .to_string()
}

fn lua_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("lua")
}

fn script_flush(con: &mut redis::Connection) {
    support::command_ok(con, &["SCRIPT", "FLUSH"]);
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
        .map(|d| d.expect("entry").path())
        // lua/includes/ holds the shared functions the scripts include.
        .filter(|d| !d.ends_with("includes"))
        .flat_map(|d| std::fs::read_dir(d).expect("pattern dir"))
        .map(|f| f.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "lua"))
        .collect();
    assert_eq!(
        on_disk.len(),
        ALL.len(),
        "every file under lua/ is registered"
    );
    for s in ALL {
        let file = std::fs::read_to_string(lua_dir().join(s.file)).expect("script file");
        // Shipped: the file with the generated checks (and the functions of
        // its includes) between header and body.
        let shipped = s.source();
        assert_eq!(
            support::without_generated_code(shipped).as_deref(),
            Some(file.as_str()),
            "{} is its file plus the generated checks and its includes",
            s.name
        );
        assert!(
            shipped.starts_with("#!lua"),
            "{}: the shebang stays first",
            s.name
        );
        assert_eq!(s.sha1, sha1_of(shipped.as_bytes()), "{}", s.name);
        assert_ne!(s.sha1, sha1_of(file.as_bytes()), "{}", s.name);
        let server_sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(shipped)
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
    // validation (the typed wrapper refuses the same call before sending).
    let server = support::server();
    let mut con = server.connection();
    let refused = support::lock_acquire("l{x}", "t", 0).unwrap_err();
    assert!(
        matches!(
            refused.kind(),
            ErrorKind::InvalidArgument { script: None, name, .. } if name == "lease_ms"
        ),
        "{refused:?}"
    );
    let err = support::raw_call::<i64>(
        &scripts::LOCK_ACQUIRE,
        &["l{x}", "l{x}:fence", "l{x}:queue", "l{x}:places"],
        &["t", "0", "0", "0"],
    )
    .run(&mut redis_patterns::Connection::open(server.url()).expect("connect"))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("script lock.acquire: {refused}"),
        "the script gives the wrapper's reason"
    );
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
    support::on_server_with_connection_in(CallMode::Evalsha, |d, con| {
        script_flush(con);
        let call = || support::lock_acquire("l{a}", "t1", 10_000);
        assert_eq!(d.run(call()).expect("first call"), 1, "{}", d.name());
        script_flush(con);
        assert!(!script_exists(con, scripts::LOCK_RELEASE.sha1));
        assert_eq!(
            d.run(support::lock_release("l{a}", "t1"))
                .expect("after flush"),
            1
        );
        assert!(
            script_exists(con, scripts::LOCK_RELEASE.sha1),
            "reloaded by SCRIPT LOAD"
        );
        assert_eq!(d.run(call()).expect("again"), 2);
    });
}

#[test]
fn a_batch_after_script_flush_runs_every_call_once_in_order() {
    support::on_server_with_connection_in(CallMode::Evalsha, |d, con| {
        let (batch, expected) = lock_rounds("l{p}", 6);
        assert!(batch.len() >= 10);
        script_flush(con);
        let replies: Vec<i64> = d
            .run(batch.clone())
            .expect("batch after flush")
            .all()
            .expect("replies");
        assert_eq!(replies, expected, "{}", d.name());
        let fence: i64 = redis::cmd("GET").arg("l{p}:fence").query(con).expect("GET");
        assert_eq!(fence, 6, "no acquire ran twice");
        // Once more with everything cached: fencing tokens go on from 7.
        let again: Vec<i64> = d.run(batch).expect("cached").all().expect("replies");
        let shifted: Vec<i64> = expected
            .iter()
            .enumerate()
            .map(|(i, &v)| if i % 3 == 0 { v + 6 } else { v })
            .collect();
        assert_eq!(again, shifted);
    });
}

#[test]
fn a_batch_that_cannot_keep_order_stops_without_running_anything_twice() {
    support::on_server_with_connection_in(CallMode::Evalsha, |d, con| {
        script_flush(con);
        // Only acquire is cached: release answers NOSCRIPT while later
        // acquires run.
        support::script_load(con, &scripts::LOCK_ACQUIRE);
        stops_after_the_first_call(d, con, "l");
    });
}

/// Three acquires, the middle one refused by the script (raw, bypassing the
/// wrapper): each reply keeps its own result.
fn mixed_batch(tag: &str) -> Batch {
    let mut batch = Batch::new();
    let (a, b, c) = (
        format!("l{{{tag}1}}"),
        format!("l{{{tag}2}}"),
        format!("l{{{tag}3}}"),
    );
    batch.script(support::lock_acquire(&a, "a", 1_000));
    batch.script(support::raw_call::<i64>(
        &scripts::LOCK_ACQUIRE,
        &[&b, &format!("{b}:fence")],
        &["b", "0"],
    ));
    batch.script(support::lock_acquire(&c, "c", 1_000));
    batch
}

fn errors_stay_in_place(d: &mut Driver, tag: &str) {
    let each = d.run(mixed_batch(tag)).expect("batch").each::<i64>();
    assert_eq!(each[0].as_ref().ok(), Some(&1), "{}", d.name());
    assert!(
        matches!(
            each[1].as_ref().map_err(Error::kind),
            Err(ErrorKind::InvalidArgument {
                script: Some("lock.acquire"),
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
    // Decoding them all gives the first error.
    let all = d
        .run(mixed_batch(&format!("{tag}x")))
        .expect("batch")
        .all::<i64>();
    assert!(matches!(
        all.map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument {
            script: Some(_),
            ..
        })
    ));
    // A refused typed call fails the whole batch before anything is sent.
    let mut refused = Batch::new();
    refused.script(support::lock_acquire("l{z}", "a", 1_000));
    refused.script(support::lock_acquire("l{z}", "", 1_000));
    let e = d.run(refused).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::InvalidArgument { script: None, name, .. } if name == "token"),
        "{e:?}"
    );
    let exists: i64 = d.cmd("l{z}", redis::cmd("EXISTS").arg("l{z}"));
    assert_eq!(exists, 0, "nothing of a refused batch was sent");
}

#[test]
fn domain_errors_stay_in_their_batch_slot() {
    let server = support::server();
    support::each_driver(&server, |d| errors_stay_in_place(d, "e"));
}

#[test]
fn read_only_scripts_use_evalsha_ro_and_run_on_a_replica() {
    let primary = support::server();
    let replica = support::server_with(&["--replicaof", "127.0.0.1", &primary.port().to_string()]);
    let mut r = replica.connection();
    let token = "owner";
    // In functions mode the primary's first call loads the library, which
    // replicates to the replica before the key does.
    let mut p = support::connect(&primary.url());
    assert!(
        support::lock_acquire("l{ro}", token, 60_000)
            .run(&mut p)
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
    let owned = scripts::lock::owned("l{ro}", token).expect("valid");
    assert!(String::from_utf8_lossy(&owned.cmd().get_packed_command()).contains("EVALSHA_RO"));
    for mut d in support::drivers(&replica.url()) {
        script_flush(&mut r);
        let left = d
            .run(scripts::lock::owned("l{ro}", token))
            .expect("EVALSHA_RO on the replica (loads it there first)");
        assert!(left > 0 && left <= 60_000, "{left}");
        assert_eq!(
            d.run(scripts::lock::owned("l{ro}", "intruder"))
                .expect("ro"),
            0
        );
        // A writing script is refused by the replica, typed.
        let err = d.run(support::lock_release("l{ro}", token)).unwrap_err();
        assert_eq!(
            err.server_kind(),
            Some(redis_patterns::ServerErrorKind::ReadOnly),
            "{err}"
        );
        assert_eq!(err.script(), Some("lock.release"));
        assert!(
            err.is_retryable(),
            "a write that reached a replica may succeed after a failover"
        );
    }
}

#[test]
fn wrapped_connections_recover_from_script_flush() {
    let server = support::server();
    let rt = support::runtime();
    rt.block_on(async {
        let (mux, mgr) = support::async_connections(&server).await;
        let mut sync = server.connection();
        let mut cons = [
            redis_patterns::AsyncConnection::from_multiplexed(mux)
                .await
                .expect("wrap multiplexed"),
            redis_patterns::AsyncConnection::from_manager(mgr)
                .await
                .expect("wrap manager"),
        ];
        for (i, con) in cons.iter_mut().enumerate() {
            let key = format!("l{{m{i}}}");
            script_flush(&mut sync);
            let fence = support::lock_acquire(&key, "t", 60_000)
                .run_async(con)
                .await
                .expect("acquire");
            assert_eq!(fence, 1);
            script_flush(&mut sync);
            let released = support::lock_release(&key, "t")
                .run_async(con)
                .await
                .expect("release");
            assert_eq!(released, 1);
            script_flush(&mut sync);
            let (batch, expected) = lock_rounds(&format!("l{{n{i}}}"), 6);
            let replies: Vec<i64> = batch
                .run_async(con)
                .await
                .expect("batch after flush")
                .all()
                .expect("replies");
            assert_eq!(replies, expected);
            let loaded = load_all().run_async(con).await.expect("load_all");
            assert_eq!(loaded.len(), ALL.len());
        }
    });
    // A plain sync connection, wrapped, too.
    let mut con = redis_patterns::Connection::from_redis(server.connection()).expect("wrap");
    script_flush(&mut server.connection());
    let (batch, expected) = lock_rounds("l{w}", 6);
    let replies: Vec<i64> = batch.run(&mut con).expect("batch").all().expect("replies");
    assert_eq!(replies, expected);
}

#[test]
fn scripts_run_unchanged_on_a_real_cluster() {
    let cluster = support::cluster();
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
    let flush_all = || {
        for n in cluster.nodes() {
            script_flush(&mut n.connection());
        }
    };
    support::each_cluster_driver(&cluster, |d| {
        flush_all();
        for n in names {
            let key = format!("l{{{n}}}");
            assert_eq!(
                d.run(support::lock_acquire(&key, "t", 60_000))
                    .expect("acquire on cluster"),
                1,
                "{}",
                d.name()
            );
            assert!(d.run(scripts::lock::owned(&key, "t")).expect("owned") > 0);
        }
        let loaded = d.run(load_all()).expect("load_all on a cluster");
        assert_eq!(loaded.len(), ALL.len());
        for node in cluster.nodes() {
            let mut n = node.connection();
            assert!(
                ALL.iter().all(|s| script_exists(&mut n, s.sha1)),
                "every script on every node"
            );
        }
        // SCRIPT FLUSH on every node, then the calls reload where needed.
        flush_all();
        for n in names {
            assert_eq!(
                d.run(support::lock_release(&format!("l{{{n}}}"), "t"))
                    .expect("release after flush"),
                1
            );
        }
        let total: i64 = cluster
            .nodes()
            .iter()
            .map(|n| support::dbsize(&mut n.connection()))
            .sum();
        assert_eq!(
            total, 6,
            "six fences spread over the nodes (locks released)"
        );

        // A batch that spans slots and nodes, after a flush: one pipeline per
        // node, replies in order, every call once.
        flush_all();
        let mut batch = Batch::new();
        for n in names {
            batch.script(support::lock_acquire(&format!("l{{{n}}}"), "w", 60_000));
            batch.script(support::lock_release(&format!("l{{{n}}}"), "w"));
        }
        let replies: Vec<i64> = d.run(batch).expect("cross-node batch").all().unwrap();
        assert_eq!(
            replies,
            names.iter().flat_map(|_| [2, 1]).collect::<Vec<i64>>()
        );
        let mut fences = Batch::new();
        for n in names {
            let key = format!("l{{{n}}}:fence");
            fences.add(&key, redis::cmd("GET").arg(&key).clone());
        }
        let values: Vec<i64> = d.run(fences).expect("cross-slot reads").all().unwrap();
        assert_eq!(values, vec![2; names.len()]);
        // An error reply stays in its slot and the later commands still run.
        errors_stay_in_place(d, "m");
        let mut wrong = Batch::new();
        wrong.add(
            "l{a}:fence",
            redis::cmd("HGET").arg("l{a}:fence").arg("f").clone(),
        );
        wrong.add("l{b}:fence", redis::cmd("GET").arg("l{b}:fence").clone());
        let values = d.run(wrong).expect("batch").into_values();
        assert!(
            matches!(&values[0], redis::Value::ServerError(e) if e.code() == "WRONGTYPE"),
            "{values:?}"
        );
        assert_eq!(
            redis::from_redis_value::<i64>(values[1].clone()).expect("int"),
            2
        );
    });
    // redis-rs's own async cluster connection refuses a cross-slot pipeline;
    // the driver splits the same batch by node.
    let client = cluster.client();
    let rt = support::runtime();
    rt.block_on(async {
        let mut raw = client
            .get_async_connection()
            .await
            .expect("async cluster connection");
        let mut pipe = redis::pipe();
        for n in names {
            pipe.get(format!("l{{{n}}}:fence"));
        }
        let refused: redis::RedisResult<Vec<Option<i64>>> = pipe.query_async(&mut raw).await;
        assert!(refused.is_err(), "one cross-slot pipeline is refused");
        let con = redis_patterns::AsyncConnection::from_cluster(raw);
        let mut batch = Batch::new();
        for n in names {
            let key = format!("l{{{n}}}:fence");
            batch.add(&key, redis::cmd("GET").arg(&key).clone());
        }
        let values: Vec<Option<i64>> = batch.run_async(&con).await.unwrap().all().unwrap();
        assert_eq!(values.len(), names.len());
        // Through the router, command by command, it stops at a call that
        // did not run as the sync one below does.
        let replies: Vec<i64> = release_not_loaded(&cluster, "l{j}")
            .run_async(&con)
            .await
            .expect("command by command, resumed after the NOSCRIPT")
            .all()
            .unwrap();
        assert_eq!(replies, [1, 1, 2], "each call ran once, in order");
    });
    // A wrapped sync ClusterConnection (no node URLs) sends command by
    // command, with the same results.
    let mut con = redis_patterns::Connection::from_cluster(client.get_connection().unwrap());
    errors_stay_in_place(
        &mut Driver::Sync(redis_patterns::Connection::open(cluster.nodes()[1].url()).unwrap()),
        "n",
    );
    // Sent command by command, a part stops at a call that did not run.
    let replies: Vec<i64> = release_not_loaded(&cluster, "l{k}")
        .run(&mut con)
        .expect("command by command, resumed after the NOSCRIPT")
        .all()
        .unwrap();
    assert_eq!(replies, [1, 1, 2], "each call ran once, in order");
    // More scripts missing than MAX_ROUNDS: the part stops at each, and
    // every such round gives a call its reply, so the batch finishes.
    for node in cluster.nodes() {
        script_flush(&mut node.connection());
    }
    let (many, names) = example_calls(&cluster, redis_patterns::Batch::MAX_ROUNDS + 4);
    let replies = many
        .run(&mut con)
        .expect("every missing script loaded in turn")
        .into_values();
    assert_eq!(replies.len(), names.len());
    for (name, reply) in names.iter().zip(&replies) {
        assert!(
            !matches!(reply, redis::Value::ServerError(_)),
            "{name}: {reply:?}"
        );
    }
    let (batch, expected) = lock_rounds("l{m}", 6);
    let replies: Vec<i64> = batch
        .run(&mut con)
        .expect("command by command")
        .all()
        .unwrap();
    assert_eq!(replies, expected);
}

/// Flushes the scripts of every node of `cluster` and loads only
/// `lock.acquire` again; returns a batch that acquires `key`, releases it
/// and acquires it with another token. Its release meets NOSCRIPT: sent
/// command by command, the batch stops there, loads the script and sends
/// the rest after it, so the replies are `[1, 1, 2]` (a pipeline would have
/// run the second acquire while the first still held the lock, and stopped
/// with `PipelineInterrupted`).
fn release_not_loaded(cluster: &redis_patterns_test_support::LocalCluster, key: &str) -> Batch {
    for node in cluster.nodes() {
        let mut c = node.connection();
        script_flush(&mut c);
        support::script_load(&mut c, &scripts::LOCK_ACQUIRE);
    }
    let mut batch = Batch::new();
    batch
        .script(support::lock_acquire(key, "a", 60_000))
        .script(support::lock_release(key, "a"))
        .script(support::lock_acquire(key, "b", 60_000));
    batch
}

/// A batch of `n` valid calls of distinct scripts from the registry's
/// examples, each on keys of its own (the `{t}` tag of example `i` becomes
/// `{t<i>}`), with their data written on `cluster`; and the scripts' names.
fn example_calls(
    cluster: &redis_patterns_test_support::LocalCluster,
    n: usize,
) -> (Batch, Vec<&'static str>) {
    let mut con = redis_patterns::Connection::open(cluster.nodes()[0].url()).unwrap();
    let (mut calls, mut names) = (Batch::new(), Vec::new());
    for (i, e) in examples::examples(false)
        .into_iter()
        .filter(|e| e.keys.iter().all(|k| k.contains("{t}")) && !e.keys.is_empty())
        .take(n)
        .enumerate()
    {
        let own = |text: &str| text.replace("{t}", &format!("{{t{i}}}"));
        let mut setup = Batch::new();
        for c in &e.setup {
            let mut cmd = redis::Cmd::new();
            for arg in c.args_iter() {
                if let redis::Arg::Simple(bytes) = arg {
                    cmd.arg(own(&String::from_utf8_lossy(bytes)));
                }
            }
            setup.add(own(&e.keys[0]), cmd);
        }
        setup.run(&mut con).expect("the example's data");
        let script =
            redis_patterns::ScriptInfo::by_name(e.script).expect("a script of the registry");
        let keys: Vec<String> = e.keys.iter().map(|k| own(k)).collect();
        let args: Vec<String> = e.args.iter().map(|a| own(a)).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        calls.script(support::raw_call::<redis::Value>(script, &keys, &args));
        names.push(script.name);
    }
    assert_eq!(names.len(), n, "enough examples");
    (calls, names)
}
