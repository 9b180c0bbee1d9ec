//! Sharded hashes against a real redis-server, every test body through both
//! drivers (sync `Connection`, async `AsyncConnection`). The line-oriented
//! import of files is the CLI's (`crates/cli/tests/import_lines.rs`).

#[path = "support/counting.rs"]
mod counting;
#[path = "support/everywhere.rs"]
mod everywhere;
mod support;

use redis_patterns::sharded_hash::{
    ImportOptions, ListpackLimits, Plan, RejectReason, Rejection, ShardedHash, Sharding,
};
use redis_patterns::{Error, ErrorKind};
use redis_patterns_test_support::LocalServer;
use support::Driver;

fn encoding(d: &mut Driver, key: &str) -> Option<String> {
    d.cmd(key, redis::cmd("OBJECT").arg("ENCODING").arg(key))
}

fn hmget_calls(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_hmget:calls="))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn get(d: &mut Driver, h: &ShardedHash, field: &str) -> Option<String> {
    d.run(h.get::<String>(field)).unwrap()
}

#[test]
fn basic_operations_use_base_colon_shard_keys() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let h = ShardedHash::new("users", 8).unwrap();
        assert_eq!(d.run(h.set("alice", "1")).unwrap(), Some(true));
        assert_eq!(d.run(h.set("alice", "2")).unwrap(), Some(false));
        assert_eq!(get(d, &h, "alice").as_deref(), Some("2"));
        assert_eq!(d.run(h.set_if_absent("alice", "3")).unwrap(), Some(false));
        assert_eq!(d.run(h.set_if_absent("bob", "b")).unwrap(), Some(true));
        assert_eq!(get(d, &h, "alice").as_deref(), Some("2"));
        assert!(d.run(h.exists("bob")).unwrap());
        assert!(!d.run(h.exists("carol")).unwrap());
        assert_eq!(d.run(h.incr("visits", 5)).unwrap(), 5);
        assert_eq!(d.run(h.incr("visits", -2)).unwrap(), 3);
        assert_eq!(d.run(h.len()).unwrap(), 3);
        assert_eq!(d.run(h.delete("bob")).unwrap(), Some(true));
        assert_eq!(d.run(h.delete("bob")).unwrap(), Some(false));
        assert_eq!(get(d, &h, "bob"), None);
        assert_eq!(d.run(h.len()).unwrap(), 2);

        // The PHP recipe's shard id: crc32(field) % shards, key base:<id>, no hash tag.
        let shard = crc32fast::hash(b"alice") % 8;
        assert_eq!(h.shard_key(b"alice").unwrap(), format!("users:{shard}"));
        let key = format!("users:{shard}");
        let v: String = d.cmd(&key, redis::cmd("HGET").arg(&key).arg("alice"));
        assert_eq!(v, "2");
        for key in support::all_keys(&mut server.connection()) {
            assert!(key.starts_with("users:") && !key.contains('{'), "{key}");
        }
    });
}

/// The separator the builder names joins base and shard id: `_` for the
/// PHP recipe's `base_<shard>` keys, or any other; every operation uses it.
#[test]
fn a_named_separator_joins_base_and_shard_id() {
    let server = support::server();
    support::each_driver(&server, |d| {
        for sep in ["_", "::", "-"] {
            let h = ShardedHash::builder("users", Sharding::Crc32 { shards: 8 })
                .separator(sep)
                .build()
                .unwrap();
            assert_eq!(h.separator(), sep);
            let shard = crc32fast::hash(b"alice") % 8;
            let key = format!("users{sep}{shard}");
            assert_eq!(h.shard_key(b"alice").unwrap(), key);
            assert_eq!(d.run(h.set("alice", "1")).unwrap(), Some(true));
            assert_eq!(d.run(h.set_if_absent("bob", "b")).unwrap(), Some(true));
            assert_eq!(d.run(h.incr("visits", 2)).unwrap(), 2);
            let v: String = d.cmd(&key, redis::cmd("HGET").arg(&key).arg("alice"));
            assert_eq!(v, "1", "{sep}: written where the key says");
            let got: Vec<Option<String>> = d.run(h.get_many(&["alice", "bob", "nobody"])).unwrap();
            assert_eq!(got, [Some("1".into()), Some("b".into()), None]);
            assert_eq!(d.run(h.len()).unwrap(), 3);
            assert_eq!(d.run(h.inspect(8)).unwrap().sampled_len, 3);
            assert_eq!(d.run(h.delete("bob")).unwrap(), Some(true));
        }
        let keys = support::all_keys(&mut server.connection());
        assert!(keys.iter().any(|k| k.starts_with("users_")), "{keys:?}");
        assert!(keys.iter().any(|k| k.starts_with("users::")), "{keys:?}");
        assert!(keys.iter().any(|k| k.starts_with("users-")), "{keys:?}");
        assert!(
            keys.iter()
                .all(|k| !k.starts_with("users:") || k.starts_with("users::")),
            "no default-separator keys: {keys:?}"
        );
        for bad in ["", "{", "}x"] {
            let e = ShardedHash::builder("users", Sharding::Crc32 { shards: 8 })
                .separator(bad)
                .build()
                .unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::InvalidArgument { name, .. } if name == "separator"),
                "{bad:?}: {e}"
            );
        }
    });
}

#[test]
fn get_many_keeps_order_reports_missing_and_sends_one_hmget_per_shard() {
    support::on_server_with_connection(|d, con| {
        let h = ShardedHash::new("m", 4).unwrap();
        let pairs: Vec<(String, String)> = (0..40)
            .map(|i| (format!("f{i}"), format!("v{i}")))
            .collect();
        assert_eq!(d.run(h.set_many(&pairs)).unwrap(), Some(40));
        let fields = ["f7", "nope", "f0", "f39", "f7", "missing2", "f12"];
        let before = hmget_calls(con);
        let got: Vec<Option<String>> = d.run(h.get_many(&fields)).unwrap();
        let after = hmget_calls(con);
        let expected: Vec<Option<String>> = fields
            .iter()
            .map(|f| f.strip_prefix('f').map(|n| format!("v{n}")))
            .collect();
        assert_eq!(got, expected);
        let shards: std::collections::BTreeSet<u64> = fields
            .iter()
            .map(|f| h.shard_of(f.as_bytes()).unwrap())
            .collect();
        assert_eq!(after - before, shards.len() as u64);
        let none: Vec<Option<Vec<u8>>> = d.run(h.get_many::<Vec<u8>, &str>(&[])).unwrap();
        assert!(none.is_empty());
    });
}

/// Writes `pairs` in batches of 10,000: a batch is one pipeline, and the
/// async driver's connection answers "timed out" when one reply takes more
/// than 500 ms (a loaded machine, 100,000 fields at once).
fn set_in_batches(d: &mut Driver, h: &ShardedHash, pairs: &[(String, String)]) {
    for chunk in pairs.chunks(10_000) {
        d.run(h.set_many(chunk)).unwrap();
    }
}

/// Fills a planned hash with `n` 11-byte fields and 8-byte values through
/// plain (non-strict) HSETs, so an overflowing shard would really convert,
/// then checks the encoding of every shard.
fn fill_and_check(d: &mut Driver, server: &LocalServer, limits: ListpackLimits, n: u64) {
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut server.connection())
        .unwrap();
    let p = Plan::new(n, limits, Plan::DEFAULT_OVERFLOW_TARGET).unwrap();
    assert!(p.overflow_bound <= Plan::DEFAULT_OVERFLOW_TARGET);
    let h = ShardedHash::builder(&format!("p{n}"), p.sharding())
        .limits(p.limits)
        .strict(false)
        .build()
        .unwrap();
    for start in (0..n).step_by(100_000) {
        let batch: Vec<(String, String)> = (start..n.min(start + 100_000))
            .map(|i| (format!("user:{i:06}"), format!("v{i:07}")))
            .collect();
        set_in_batches(d, &h, &batch);
    }
    let health = d.run(h.inspect(u64::MAX)).unwrap();
    assert_eq!(health.sampled, p.shards as u64);
    assert_eq!(
        health.converted, 0,
        "n={n} limits={limits:?} shards={}: {health:?}",
        p.shards
    );
    assert!(health.max_len <= limits.entries, "{health:?}");
    assert_eq!(health.sampled_len, n);
    assert_eq!(d.run(h.len()).unwrap(), n);
    assert_eq!(health.listpack + health.missing, p.shards as u64);
    if n >= 100_000 {
        // Not the mean: the fullest shard is well above it.
        assert!(
            health.max_len as f64 > p.mean_per_shard * 1.1,
            "{health:?} {p:?}"
        );
    }
}

#[test]
fn planner_never_overflows_at_default_limits() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let limits = d.run(ListpackLimits::from_server()).unwrap();
        assert_eq!(limits, ListpackLimits::DEFAULT);
        for n in [1_000, 100_000, 1_000_000] {
            fill_and_check(d, &server, limits, n);
        }
    });
}

#[test]
fn planner_never_overflows_at_a_lowered_entry_limit() {
    let server = support::server_with(&["--hash-max-listpack-entries", "128"]);
    support::each_driver(&server, |d| {
        let limits = d.run(ListpackLimits::from_server()).unwrap();
        assert_eq!(
            limits,
            ListpackLimits {
                entries: 128,
                value: 64
            }
        );
        let (h, p) = d.run(ShardedHash::planned("x", 100_000)).unwrap();
        assert_eq!(h.limits().entries, 128);
        assert_eq!(h.shards(), p.shards as u64);
        for n in [1_000, 100_000, 1_000_000] {
            fill_and_check(d, &server, limits, n);
        }
    });
}

#[test]
fn sizing_by_the_mean_overflows_where_the_plan_does_not() {
    support::on_server(|d| {
        let n = 100_000u64;
        // ~500 per shard on average against the 512 limit (the example).
        let h = ShardedHash::builder(
            "mean",
            Sharding::Crc32 {
                shards: (n / 500) as u32,
            },
        )
        .strict(false)
        .build()
        .unwrap();
        let batch: Vec<(String, String)> = (0..n)
            .map(|i| (format!("user:{i:06}"), format!("v{i:07}")))
            .collect();
        set_in_batches(d, &h, &batch);
        let health = d.run(h.inspect(u64::MAX)).unwrap();
        assert!(health.converted > 0, "{health:?}");
        assert!(!health.converted_keys.is_empty());
        assert_eq!(
            encoding(d, &health.converted_keys[0]).as_deref(),
            Some("hashtable")
        );
    });
}

#[test]
fn config_refused_falls_back_to_the_documented_defaults() {
    let server = support::server_with(&["--rename-command", "CONFIG", ""]);
    support::each_driver(&server, |d| {
        assert_eq!(d.run(ListpackLimits::query()).unwrap(), None);
        assert_eq!(
            d.run(ListpackLimits::from_server()).unwrap(),
            ListpackLimits {
                entries: 512,
                value: 64
            }
        );
        let (h, _) = d.run(ShardedHash::planned("d", 1000)).unwrap();
        assert_eq!(h.limits(), ListpackLimits::DEFAULT);
    });
}

#[test]
fn strict_writes_never_convert_a_shard() {
    support::on_server(|d| {
        let limits = ListpackLimits {
            entries: 4,
            value: 8,
        };
        let h = ShardedHash::builder("s", Sharding::Crc32 { shards: 1 })
            .limits(limits)
            .build()
            .unwrap();
        let pairs: Vec<(String, String)> = (0..4).map(|i| (format!("f{i}"), "v".into())).collect();
        assert_eq!(d.run(h.set_many(&pairs)).unwrap(), Some(4));
        // Overwriting existing fields is fine at the limit.
        assert_eq!(d.run(h.set("f0", "w")).unwrap(), Some(false));
        match d.run(h.set("f4", "v")).map_err(Error::into_kind) {
            Err(ErrorKind::ShardFull { detail, .. }) => {
                assert!(detail.contains("s:0"), "{detail}")
            }
            other => panic!("expected ShardFull, got {other:?}"),
        }
        match d.run(h.incr("counter", 1)).map_err(Error::into_kind) {
            Err(ErrorKind::ShardFull { .. }) => {}
            other => panic!("expected ShardFull, got {other:?}"),
        }
        // A batch that would overflow writes nothing, not even its fitting part.
        let more = [("f1", "x"), ("new1", "y")];
        assert!(matches!(
            d.run(h.set_many(&more)).map_err(Error::into_kind),
            Err(ErrorKind::ShardFull { .. })
        ));
        assert_eq!(get(d, &h, "f1").as_deref(), Some("v"));
        assert_eq!(d.run(h.len()).unwrap(), 4);
        assert_eq!(encoding(d, "s:0").as_deref(), Some("listpack"));
        // set-if-absent of present fields adds nothing and counts nothing.
        assert_eq!(
            d.run(h.set_if_absent_many(&[("f2", "z"), ("f2", "q")]))
                .unwrap(),
            Some(0)
        );
        assert_eq!(get(d, &h, "f2").as_deref(), Some("v"));
        let health = d.run(h.inspect(10)).unwrap();
        assert_eq!((health.listpack, health.converted), (1, 0));
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    support::on_server_with_connection(|d, con| {
        assert!(matches!(
            ShardedHash::new("", 4).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { name, .. }) if name == "base"
        ));
        assert!(matches!(
            ShardedHash::new("b", 0).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            ShardedHash::by_id("b", 0, 10).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            d.run(ShardedHash::planned("", 10)).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { name, .. }) if name == "base"
        ));
        let h = ShardedHash::new("b", 4).unwrap();
        let long = "x".repeat(65);
        match d.run(h.set("f", &long)).map_err(Error::into_kind) {
            Err(ErrorKind::ListpackValueTooLong { what, len, limit }) => {
                assert_eq!((what, len, limit), ("value", 65, 64))
            }
            other => panic!("expected ListpackValueTooLong, got {other:?}"),
        }
        assert!(matches!(
            d.run(h.set_if_absent(&long, "v")).map_err(Error::into_kind),
            Err(ErrorKind::ListpackValueTooLong { what: "field", .. })
        ));
        // One bad pair in a batch: nothing of the batch is written.
        assert!(matches!(
            d.run(h.set_many(&[("ok", "v".to_string()), ("bad", long.clone())]))
                .map_err(Error::into_kind),
            Err(ErrorKind::ListpackValueTooLong { .. })
        ));
        let ids = ShardedHash::by_id("ids", 100, 999).unwrap();
        assert!(matches!(
            d.run(ids.set("1000", "v")).map_err(Error::into_kind),
            Err(ErrorKind::IdOutOfRange { id: 1000, max: 999 })
        ));
        assert!(matches!(
            d.run(ids.set("12a", "v")).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            d.run(ids.set("007", "v")).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert_eq!(support::dbsize(con), 0);
        assert!(d.run(h.inspect(0)).is_err());
        // Not strict: the long value is stored and its shard converts; inspect says so.
        let loose = ShardedHash::builder("b", h.sharding())
            .strict(false)
            .build()
            .unwrap();
        assert!(!loose.is_strict());
        assert_eq!(d.run(loose.set("f", &long)).unwrap(), Some(true));
        let health = d.run(loose.inspect(4)).unwrap();
        assert_eq!(health.converted, 1);
        assert_eq!(health.missing, 3);
    });
}

#[test]
fn integer_ids_fill_shards_evenly() {
    support::on_server(|d| {
        let h = ShardedHash::by_id("ids", 500, 9_999).unwrap();
        assert_eq!(h.shards(), 20);
        assert_eq!(
            h.sharding(),
            Sharding::ById {
                fields_per_shard: 500,
                max_id: 9_999
            }
        );
        let pairs: Vec<(String, String)> = (0..10_000)
            .map(|i| (i.to_string(), format!("v{i}")))
            .collect();
        assert_eq!(d.run(h.set_many(&pairs)).unwrap(), Some(10_000));
        assert_eq!(h.shard_key(b"499").unwrap(), "ids:0");
        assert_eq!(h.shard_key(b"500").unwrap(), "ids:1");
        let health = d.run(h.inspect(100)).unwrap();
        assert_eq!(
            (health.sampled, health.listpack, health.max_len),
            (20, 20, 500)
        );
        assert_eq!(get(d, &h, "9999").as_deref(), Some("v9999"));
    });
}

#[test]
fn import_from_any_iterator() {
    support::on_server(|d| {
        let h = ShardedHash::builder("it", Sharding::Crc32 { shards: 16 })
            .strict(false)
            .build()
            .unwrap();
        d.run(h.set("k3", "old")).unwrap();
        let items = (0..1000).map(|i| (format!("k{i}"), format!("v{i}")));
        let options = ImportOptions {
            batch: 128,
            ..ImportOptions::default()
        };
        let report = d.run(h.import(items, options)).unwrap();
        assert_eq!(
            (
                report.items,
                report.inserted,
                report.present,
                report.rejected
            ),
            (1000, 999, 1, 0)
        );
        assert_eq!(get(d, &h, "k3").as_deref(), Some("old"));
        assert_eq!(d.run(h.len()).unwrap(), 1000);
        let none = ImportOptions {
            batch: 0,
            ..ImportOptions::default()
        };
        assert!(
            d.run(h.import(Vec::<(String, String)>::new(), none))
                .is_err()
        );
    });
}

/// Batches end at `batch` items or `batch_bytes` bytes, whichever comes
/// first: one `put` per shard per batch, so the number of `put` calls tells
/// how many batches went out; rejections name the caller's positions.
#[test]
fn import_batches_by_bytes_and_keeps_the_callers_positions() {
    support::on_server_with_connection(|d, con| {
        let h = ShardedHash::new("nb", 1).unwrap();
        // Loads the put script (or the library) first, so no reload retry
        // adds a call.
        assert_eq!(d.run(h.set("warm", "v")).unwrap(), Some(true));
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(con).unwrap();
        // 10 items of 10 bytes (5 + 5), 30 bytes per batch: batches of 3, 3, 3, 1.
        let items = (0..10u64).map(|i| (100 + i, format!("f{i:04}"), "vvvvv".to_string()));
        let options = ImportOptions {
            batch: 1000,
            batch_bytes: 30,
        };
        let report = d.run(h.import_numbered(items, options)).unwrap();
        assert_eq!(
            (report.items, report.inserted, report.rejected),
            (10, 10, 0)
        );
        let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
        let calls = |name: &str| -> u64 {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
                .and_then(|r| r.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        assert_eq!(
            calls("evalsha") + calls("eval") + calls("fcall"),
            4,
            "{} {info}",
            d.call_mode()
        );
        // Rejected items are reported at the positions the caller gave.
        let items = [(7u64, "x".repeat(65), "v"), (9, "ok".into(), "v")];
        let report = d.run(h.import_numbered(items, options)).unwrap();
        assert_eq!(
            report.rejections,
            [Rejection {
                position: 7,
                reason: RejectReason::ValueTooLong(65)
            }]
        );
        assert_eq!((report.items, report.inserted), (2, 1));
    });
}

/// Multi-shard calls send one batch each (one pipeline per node), and an
/// import one per batch of items: 64 shards on a cluster are not 64 round
/// trips.
fn one_batch_per_call(d: &mut Driver) {
    let h = ShardedHash::new("one", 64).unwrap();
    let pairs: Vec<(String, String)> = (0..500)
        .map(|i| (format!("f{i}"), format!("v{i}")))
        .collect();
    let fields: Vec<&str> = pairs.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(counting::counted(d, h.set_many(&pairs)), (Some(500), 1));
    assert_eq!(
        counting::counted(d, h.set_if_absent_many(&pairs)),
        (Some(0), 1)
    );
    let (got, sends) = counting::counted(d, h.get_many::<String, _>(&fields));
    assert_eq!((got.iter().flatten().count(), sends), (500, 1));
    assert_eq!(counting::counted(d, h.len()), (500, 1));
    let (health, sends) = counting::counted(d, h.inspect(u64::MAX));
    assert_eq!((health.sampled, health.sampled_len, sends), (64, 500, 1));
    let items = (0..1000).map(|i| (format!("g{i}"), "v"));
    let options = ImportOptions {
        batch: 300,
        ..ImportOptions::default()
    };
    let (report, sends) = counting::counted(d, h.import(items, options));
    assert_eq!((report.inserted, sends), (1000, 4), "{}", d.name());
    let (none, sends) = counting::counted(d, h.get_many::<String, &str>(&[]));
    assert_eq!((none.len(), sends), (0, 0));
}

#[test]
fn multi_shard_calls_send_one_batch_on_one_server_and_a_cluster() {
    support::on_server_and_cluster(one_batch_per_call);
}

/// Every public operation of a sharded hash, through one driver; returns
/// what each one answered (as text) so two servers and drivers can be
/// compared.
fn every_operation(d: &mut Driver) -> Vec<String> {
    let mut log = everywhere::Log::default();
    let limits = d.run(ListpackLimits::from_server()).unwrap();
    log.note("limits", &limits);
    let (planned, p) = d.run(ShardedHash::planned("planned", 5_000)).unwrap();
    log.note("plan", &p.shards);
    let h = ShardedHash::new("users", 16).unwrap();
    log.note("set new", &d.run(h.set("alice", "1")).unwrap());
    log.note("set again", &d.run(h.set("alice", "2")).unwrap());
    log.note(
        "set_if_absent",
        &d.run(h.set_if_absent("alice", "3")).unwrap(),
    );
    log.note(
        "set_if_absent new",
        &d.run(h.set_if_absent("bob", "b")).unwrap(),
    );
    log.note("get", &d.run(h.get::<String>("alice")).unwrap());
    log.note("get missing", &d.run(h.get::<String>("nobody")).unwrap());
    let pairs: Vec<(String, String)> = (0..200)
        .map(|i| (format!("u{i}"), format!("v{i}")))
        .collect();
    log.note("set_many", &d.run(h.set_many(&pairs)).unwrap());
    let again: Vec<(String, String)> = (150..260)
        .map(|i| (format!("u{i}"), format!("w{i}")))
        .collect();
    log.note(
        "set_if_absent_many",
        &d.run(h.set_if_absent_many(&again)).unwrap(),
    );
    let fields: Vec<String> = (0..270).step_by(7).map(|i| format!("u{i}")).collect();
    let got = d.run(h.get_many::<String, _>(&fields)).unwrap();
    assert_eq!(got[0].as_deref(), Some("v0"));
    assert_eq!(got.last().unwrap(), &None, "u266 was never written");
    log.note("get_many", &got);
    log.note("exists", &d.run(h.exists("u3")).unwrap());
    log.note("delete", &d.run(h.delete("u3")).unwrap());
    log.note("delete again", &d.run(h.delete("u3")).unwrap());
    log.note("exists after delete", &d.run(h.exists("u3")).unwrap());
    log.note("incr", &d.run(h.incr("count", 5)).unwrap());
    log.note("incr again", &d.run(h.incr("count", -7)).unwrap());
    log.note("len", &d.run(h.len()).unwrap());
    log.note("is_empty", &d.run(h.is_empty()).unwrap());
    log.note("inspect all", &d.run(h.inspect(100)).unwrap());
    log.note("inspect some", &d.run(h.inspect(5)).unwrap());
    log.note("planned empty", &d.run(planned.is_empty()).unwrap());

    // Not strict: plain HSET / HSETNX batches.
    let loose = ShardedHash::builder("loose", Sharding::Crc32 { shards: 12 })
        .strict(false)
        .build()
        .unwrap();
    log.note("loose set_many", &d.run(loose.set_many(&pairs)).unwrap());
    log.note(
        "loose set_if_absent_many",
        &d.run(loose.set_if_absent_many(&again)).unwrap(),
    );
    let long = "x".repeat(100);
    log.note("loose long", &d.run(loose.set("long", &long)).unwrap());
    log.note("loose incr", &d.run(loose.incr("n", 3)).unwrap());
    log.note("loose len", &d.run(loose.len()).unwrap());
    let health = d.run(loose.inspect(100)).unwrap();
    assert_eq!(health.converted, 1);
    log.note("loose inspect", &health);

    // Strict shards of at most 4 fields: a full shard refuses its part of a
    // batch (typed) while the other shards' parts are written.
    let tiny = ListpackLimits {
        entries: 4,
        value: 64,
    };
    // 8 ids per shard, at most 4 fields: shards 0 (ids 0-7) and 1 (8-15) are
    // filled to the limit first.
    let small = ShardedHash::builder(
        "small",
        Sharding::ById {
            fields_per_shard: 8,
            max_id: 99,
        },
    )
    .limits(tiny)
    .build()
    .unwrap();
    let first: Vec<(String, String)> = (0..4)
        .chain(8..12)
        .map(|i| (i.to_string(), "a".into()))
        .collect();
    log.note("small set_many", &d.run(small.set_many(&first)).unwrap());
    match d
        .run(small.set_many(&[("3", "x"), ("4", "x"), ("16", "x")]))
        .map_err(Error::into_kind)
    {
        Err(ErrorKind::ShardFull { .. }) => {}
        other => panic!("expected ShardFull, got {other:?}"),
    }
    // Shard 0's part was refused whole; shard 2's part was written.
    let after = d
        .run(small.get_many::<String, _>(&["3", "4", "16"]))
        .unwrap();
    assert_eq!(after, [Some("a".to_string()), None, Some("x".to_string())]);
    log.note("small incr existing", &d.run(small.incr("0", 1)));
    match d.run(small.incr("5", 1)).map_err(Error::into_kind) {
        Err(ErrorKind::ShardFull { .. }) => {}
        other => panic!("expected ShardFull, got {other:?}"),
    }
    // Batches of 6: 0-5 (shard 0 full: 6 rejected), 6-11 (2 rejected, 4
    // present), 12-17 (4 rejected; 16 present, 17 inserted), 18-19 (inserted).
    let six = ImportOptions {
        batch: 6,
        ..ImportOptions::default()
    };
    let imported = d
        .run(small.import((0..20).map(|i| (i.to_string(), format!("i{i}"))), six))
        .unwrap();
    assert_eq!(
        (imported.inserted, imported.present, imported.rejected),
        (3, 5, 12)
    );
    log.note("small import", &imported);
    let ten = ImportOptions {
        batch: 10,
        ..ImportOptions::default()
    };
    let extra = d
        .run(small.import([("3", "z"), ("13", "z"), ("77", "z")], ten))
        .unwrap();
    assert_eq!((extra.inserted, extra.present, extra.rejected), (1, 1, 1));
    log.note("small import full shard", &extra);
    log.0
}

/// Every field of every shard of the hashes `every_operation` writes.
fn dump(d: &mut Driver) -> everywhere::HashDump {
    let hashes = [
        ShardedHash::new("users", 16).unwrap(),
        ShardedHash::new("loose", 12).unwrap(),
        ShardedHash::by_id("small", 8, 99).unwrap(),
    ];
    everywhere::dump_hashes(d, hashes.iter().flat_map(|h| h.shard_keys()))
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let server = support::server();
    let cluster = support::cluster();
    everywhere::same_everywhere(&server, &cluster, |d| (every_operation(d), dump(d)));
}

/// An increment with a request id applies once per request, however often
/// it is sent; its request key lives in the shard's slot (so it runs on a
/// cluster) and expires.
fn incr_once_applies_once_per_request(d: &mut Driver) {
    use redis_patterns::core::RequestId;
    for strict in [true, false] {
        let h = ShardedHash::builder(&format!("once{strict}"), Sharding::Crc32 { shards: 16 })
            .strict(strict)
            .build()
            .unwrap();
        let first = RequestId::new("order-1:line-1").unwrap();
        assert_eq!(d.run(h.incr_once("stock", 5, &first)).unwrap(), 5);
        assert_eq!(
            d.run(h.incr_once("stock", 5, &first)).unwrap(),
            5,
            "{strict}"
        );
        let second = RequestId::random();
        assert_eq!(d.run(h.incr_once("stock", -2, &second)).unwrap(), 3);
        assert_eq!(d.run(h.incr_once("stock", -2, &second)).unwrap(), 3);
        assert_eq!(d.run(h.incr("stock", 1)).unwrap(), 4);
        assert_eq!(get(d, &h, "stock").as_deref(), Some("4"));
        let shard = h.shard_key(b"stock").unwrap();
        let key = first.key_for(&shard).unwrap();
        assert_eq!(key, format!("{{{shard}}}:req:order-1:line-1"));
        let ttl: i64 = d.cmd(&key, redis::cmd("PTTL").arg(&key));
        assert!(ttl > 0 && ttl <= 3_600_000, "{ttl}");
    }
}

#[test]
fn incr_once_applies_once_per_request_on_a_server_and_a_cluster() {
    support::on_server_and_cluster(incr_once_applies_once_per_request);
}
