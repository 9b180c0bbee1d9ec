//! Sharded hashes against a real redis-server.

mod support;

use std::io::Write as _;

use redis_patterns::sharded_hash::{
    DEFAULT_OVERFLOW_TARGET, ImportOptions, LineFormat, ListpackLimits, RejectReason, ShardedHash,
    Sharding, Topology, plan,
};
use redis_patterns::{Error, ErrorKind};

fn encoding(con: &mut redis::Connection, key: &str) -> Option<String> {
    redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(key)
        .query(con)
        .unwrap()
}

fn hmget_calls(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_hmget:calls="))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn basic_operations_use_base_colon_shard_keys() {
    let server = support::server();
    let mut con = server.connection();
    let h = ShardedHash::new("users", 8).unwrap();
    assert!(h.set(&mut con, "alice", "1").unwrap());
    assert!(!h.set(&mut con, "alice", "2").unwrap());
    assert_eq!(
        h.get::<String>(&mut con, "alice").unwrap().as_deref(),
        Some("2")
    );
    assert!(!h.set_if_absent(&mut con, "alice", "3").unwrap());
    assert!(h.set_if_absent(&mut con, "bob", "b").unwrap());
    assert_eq!(
        h.get::<String>(&mut con, "alice").unwrap().as_deref(),
        Some("2")
    );
    assert!(h.exists(&mut con, "bob").unwrap());
    assert!(!h.exists(&mut con, "carol").unwrap());
    assert_eq!(h.incr(&mut con, "visits", 5).unwrap(), 5);
    assert_eq!(h.incr(&mut con, "visits", -2).unwrap(), 3);
    assert_eq!(h.len(&mut con).unwrap(), 3);
    assert!(h.delete(&mut con, "bob").unwrap());
    assert!(!h.delete(&mut con, "bob").unwrap());
    assert_eq!(h.get::<String>(&mut con, "bob").unwrap(), None);
    assert_eq!(h.len(&mut con).unwrap(), 2);

    // The seed's shard id: crc32(field) % shards, key base:<id>, no hash tag.
    let shard = crc32fast::hash(b"alice") % 8;
    assert_eq!(h.shard_key(b"alice").unwrap(), format!("users:{shard}"));
    let v: String = redis::cmd("HGET")
        .arg(format!("users:{shard}"))
        .arg("alice")
        .query(&mut con)
        .unwrap();
    assert_eq!(v, "2");
    for key in support::all_keys(&mut con) {
        assert!(key.starts_with("users:") && !key.contains('{'), "{key}");
    }
}

#[test]
fn get_many_keeps_order_reports_missing_and_sends_one_hmget_per_shard() {
    let server = support::server();
    let mut con = server.connection();
    let h = ShardedHash::new("m", 4).unwrap();
    let pairs: Vec<(String, String)> = (0..40)
        .map(|i| (format!("f{i}"), format!("v{i}")))
        .collect();
    assert_eq!(h.set_many(&mut con, &pairs).unwrap(), 40);
    let fields = ["f7", "nope", "f0", "f39", "f7", "missing2", "f12"];
    let before = hmget_calls(&mut con);
    let got: Vec<Option<String>> = h.get_many(&mut con, &fields).unwrap();
    let after = hmget_calls(&mut con);
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
    let none: Vec<Option<Vec<u8>>> = h.get_many::<Vec<u8>, &str>(&mut con, &[]).unwrap();
    assert!(none.is_empty());
}

/// Fills a planned hash with `n` 11-byte fields and 8-byte values through
/// plain (non-strict) HSETs, so an overflowing shard would really convert,
/// then checks the encoding of every shard.
fn fill_and_check(con: &mut redis::Connection, limits: ListpackLimits, n: u64) {
    let _: () = redis::cmd("FLUSHALL").query(con).unwrap();
    let p = plan(n, limits, DEFAULT_OVERFLOW_TARGET).unwrap();
    assert!(p.overflow_bound <= DEFAULT_OVERFLOW_TARGET);
    let h = ShardedHash::from_plan(&format!("p{n}"), &p)
        .unwrap()
        .strict(false);
    let mut batch = Vec::with_capacity(100_000);
    for i in 0..n {
        batch.push((format!("user:{i:06}"), format!("v{i:07}")));
        if batch.len() == 100_000 {
            h.set_many(con, &batch).unwrap();
            batch.clear();
        }
    }
    h.set_many(con, &batch).unwrap();
    let health = h.inspect(con, u64::MAX).unwrap();
    assert_eq!(health.sampled, p.shards as u64);
    assert_eq!(
        health.converted, 0,
        "n={n} limits={limits:?} shards={}: {health:?}",
        p.shards
    );
    assert!(health.max_len <= limits.entries, "{health:?}");
    assert_eq!(health.sampled_len, n);
    assert_eq!(h.len(con).unwrap(), n);
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
    let mut con = server.connection();
    let limits = ListpackLimits::from_server(&mut con).unwrap();
    assert_eq!(limits, ListpackLimits::DEFAULT);
    for n in [1_000, 100_000, 1_000_000] {
        fill_and_check(&mut con, limits, n);
    }
}

#[test]
fn planner_never_overflows_at_a_lowered_entry_limit() {
    let server = support::server_with(&["--hash-max-listpack-entries", "128"]);
    let mut con = server.connection();
    let limits = ListpackLimits::from_server(&mut con).unwrap();
    assert_eq!(
        limits,
        ListpackLimits {
            entries: 128,
            value: 64
        }
    );
    let (h, p) = ShardedHash::planned(&mut con, "x", 100_000).unwrap();
    assert_eq!(h.limits().entries, 128);
    assert_eq!(h.shard_count(), p.shards as u64);
    for n in [1_000, 100_000, 1_000_000] {
        fill_and_check(&mut con, limits, n);
    }
}

#[test]
fn sizing_by_the_mean_overflows_where_the_plan_does_not() {
    let server = support::server();
    let mut con = server.connection();
    let n = 100_000u64;
    // ~500 per shard on average against the 512 limit (the example).
    let h = ShardedHash::new("mean", (n / 500) as u32)
        .unwrap()
        .strict(false);
    let batch: Vec<(String, String)> = (0..n)
        .map(|i| (format!("user:{i:06}"), format!("v{i:07}")))
        .collect();
    h.set_many(&mut con, &batch).unwrap();
    let health = h.inspect(&mut con, u64::MAX).unwrap();
    assert!(health.converted > 0, "{health:?}");
    assert!(!health.converted_keys.is_empty());
    assert_eq!(
        encoding(&mut con, &health.converted_keys[0]).as_deref(),
        Some("hashtable")
    );
}

#[test]
fn config_refused_falls_back_to_the_documented_defaults() {
    let server = support::server_with(&["--rename-command", "CONFIG", ""]);
    let mut con = server.connection();
    assert_eq!(ListpackLimits::query(&mut con).unwrap(), None);
    assert_eq!(
        ListpackLimits::from_server(&mut con).unwrap(),
        ListpackLimits {
            entries: 512,
            value: 64
        }
    );
    let (h, _) = ShardedHash::planned(&mut con, "d", 1000).unwrap();
    assert_eq!(h.limits(), ListpackLimits::DEFAULT);
}

#[test]
fn strict_writes_never_convert_a_shard() {
    let server = support::server();
    let mut con = server.connection();
    let limits = ListpackLimits {
        entries: 4,
        value: 8,
    };
    let h = ShardedHash::new("s", 1).unwrap().with_limits(limits);
    let pairs: Vec<(String, String)> = (0..4).map(|i| (format!("f{i}"), "v".into())).collect();
    assert_eq!(h.set_many(&mut con, &pairs).unwrap(), 4);
    // Overwriting existing fields is fine at the limit.
    assert!(!h.set(&mut con, "f0", "w").unwrap());
    match h.set(&mut con, "f4", "v").map_err(Error::into_kind) {
        Err(ErrorKind::ShardFull { detail, .. }) => assert!(detail.contains("s:0"), "{detail}"),
        other => panic!("expected ShardFull, got {other:?}"),
    }
    match h.incr(&mut con, "counter", 1).map_err(Error::into_kind) {
        Err(ErrorKind::ShardFull { .. }) => {}
        other => panic!("expected ShardFull, got {other:?}"),
    }
    // A batch that would overflow writes nothing, not even its fitting part.
    let more = [("f1", "x"), ("new1", "y")];
    assert!(matches!(
        h.set_many(&mut con, &more).map_err(Error::into_kind),
        Err(ErrorKind::ShardFull { .. })
    ));
    assert_eq!(
        h.get::<String>(&mut con, "f1").unwrap().as_deref(),
        Some("v")
    );
    assert_eq!(h.len(&mut con).unwrap(), 4);
    assert_eq!(encoding(&mut con, "s:0").as_deref(), Some("listpack"));
    // set-if-absent of present fields adds nothing and counts nothing.
    assert_eq!(
        h.set_if_absent_many(&mut con, &[("f2", "z"), ("f2", "q")])
            .unwrap(),
        0
    );
    assert_eq!(
        h.get::<String>(&mut con, "f2").unwrap().as_deref(),
        Some("v")
    );
    let health = h.inspect(&mut con, 10).unwrap();
    assert_eq!((health.listpack, health.converted), (1, 0));
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let server = support::server();
    let mut con = server.connection();
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
    let h = ShardedHash::new("b", 4).unwrap();
    let long = "x".repeat(65);
    match h.set(&mut con, "f", &long).map_err(Error::into_kind) {
        Err(ErrorKind::ListpackValueTooLong { what, len, limit }) => {
            assert_eq!((what, len, limit), ("value", 65, 64))
        }
        other => panic!("expected ListpackValueTooLong, got {other:?}"),
    }
    assert!(matches!(
        h.set_if_absent(&mut con, &long, "v")
            .map_err(Error::into_kind),
        Err(ErrorKind::ListpackValueTooLong { what: "field", .. })
    ));
    // One bad pair in a batch: nothing of the batch is written.
    assert!(matches!(
        h.set_many(&mut con, &[("ok", "v".to_string()), ("bad", long.clone())])
            .map_err(Error::into_kind),
        Err(ErrorKind::ListpackValueTooLong { .. })
    ));
    let ids = ShardedHash::by_id("ids", 100, 999).unwrap();
    assert!(matches!(
        ids.set(&mut con, "1000", "v").map_err(Error::into_kind),
        Err(ErrorKind::IdOutOfRange { id: 1000, max: 999 })
    ));
    assert!(matches!(
        ids.set(&mut con, "12a", "v").map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        ids.set(&mut con, "007", "v").map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert_eq!(support::dbsize(&mut con), 0);
    assert!(h.inspect(&mut con, 0).is_err());
    // Not strict: the long value is stored and its shard converts; inspect says so.
    let loose = h.clone().strict(false);
    assert!(loose.set(&mut con, "f", &long).unwrap());
    let health = loose.inspect(&mut con, 4).unwrap();
    assert_eq!(health.converted, 1);
    assert_eq!(health.missing, 3);
}

#[test]
fn integer_ids_fill_shards_evenly() {
    let server = support::server();
    let mut con = server.connection();
    let h = ShardedHash::by_id("ids", 500, 9_999).unwrap();
    assert_eq!(h.shard_count(), 20);
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
    assert_eq!(h.set_many(&mut con, &pairs).unwrap(), 10_000);
    assert_eq!(h.shard_key(b"499").unwrap(), "ids:0");
    assert_eq!(h.shard_key(b"500").unwrap(), "ids:1");
    let health = h.inspect(&mut con, 100).unwrap();
    assert_eq!(
        (health.sampled, health.listpack, health.max_len),
        (20, 20, 500)
    );
    assert_eq!(
        h.get::<String>(&mut con, "9999").unwrap().as_deref(),
        Some("v9999")
    );
}

fn write_file(dir: &std::path::Path, name: &str, parts: &[&[u8]]) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for p in parts {
        f.write_all(p).unwrap();
    }
    path
}

#[test]
fn import_counts_blank_huge_and_invalid_lines_and_keeps_stored_values() {
    let server = support::server();
    let mut con = server.connection();
    let dir = server.dir().join("import");
    std::fs::create_dir_all(&dir).unwrap();
    let huge = vec![b'x'; 10 << 20];
    let path = write_file(
        &dir,
        "in.txt",
        &[
            b"zero\n",
            b"\n",
            &huge,
            b"\n",
            b"bad \xff\xfe utf8\n",
            b"four\r\n",
            b"five",
        ],
    );
    let h = ShardedHash::new("imp", 3).unwrap();
    // Already stored before the import: must survive.
    assert!(h.set(&mut con, "4", "kept").unwrap());
    let mut calls = 0;
    let report = h
        .import_lines(
            &mut con,
            std::io::BufReader::new(std::fs::File::open(&path).unwrap()),
            ImportOptions {
                max_line: 1 << 20,
                batch: 2,
                ..ImportOptions::default()
            },
            |_| calls += 1,
        )
        .unwrap();
    assert_eq!(report.lines, 6);
    assert_eq!(
        (report.inserted, report.present, report.rejected),
        (2, 1, 3)
    );
    let reasons: Vec<(u64, RejectReason)> = report
        .rejections
        .iter()
        .map(|r| (r.line, r.reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        vec![
            (2, RejectReason::Blank),
            (3, RejectReason::TooLong(10 << 20)),
            (4, RejectReason::InvalidUtf8),
        ]
    );
    assert!(calls >= 2);
    // Field = 0-based line index, as the seed's explode() key.
    let got: Vec<Option<String>> = h
        .get_many(&mut con, &["0", "1", "2", "3", "4", "5"])
        .unwrap();
    assert_eq!(
        got,
        vec![
            Some("zero".into()),
            None,
            None,
            None,
            Some("kept".into()),
            Some("five".into())
        ]
    );
    assert_eq!(h.len(&mut con).unwrap(), 3);
    assert_eq!(report.bytes, std::fs::metadata(&path).unwrap().len());
}

#[test]
fn import_tsv_and_strict_value_limit() {
    let server = support::server();
    let mut con = server.connection();
    let dir = server.dir().join("import");
    std::fs::create_dir_all(&dir).unwrap();
    let long = format!("k\t{}\n", "y".repeat(65));
    let path = write_file(
        &dir,
        "in.tsv",
        &[
            b"a\t1\n",
            b"no tab here\n",
            b"\tempty field\n",
            long.as_bytes(),
            b"b\t2\tx\n",
            b"a\t9\n",
        ],
    );
    let h = ShardedHash::new("tsv", 2).unwrap();
    let report = h
        .import_lines(
            &mut con,
            std::io::BufReader::new(std::fs::File::open(&path).unwrap()),
            ImportOptions {
                format: LineFormat::Tsv,
                ..ImportOptions::default()
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(
        (report.inserted, report.present, report.rejected),
        (2, 1, 3)
    );
    assert_eq!(report.rejections[2].reason, RejectReason::ValueTooLong(65));
    assert_eq!(
        h.get::<String>(&mut con, "a").unwrap().as_deref(),
        Some("1")
    );
    assert_eq!(
        h.get::<String>(&mut con, "b").unwrap().as_deref(),
        Some("2\tx")
    );
    assert_eq!(h.get::<String>(&mut con, "k").unwrap(), None);
}

#[test]
fn import_from_any_iterator() {
    let server = support::server();
    let mut con = server.connection();
    let h = ShardedHash::new("it", 16).unwrap().strict(false);
    h.set(&mut con, "k3", "old").unwrap();
    let items = (0..1000).map(|i| (format!("k{i}"), format!("v{i}")));
    let report = h.import(&mut con, items, 128, |_| {}).unwrap();
    assert_eq!(
        (
            report.lines,
            report.inserted,
            report.present,
            report.rejected
        ),
        (1000, 999, 1, 0)
    );
    assert_eq!(
        h.get::<String>(&mut con, "k3").unwrap().as_deref(),
        Some("old")
    );
    assert_eq!(h.len(&mut con).unwrap(), 1000);
    assert!(
        h.import(&mut con, Vec::<(String, String)>::new(), 0, |_| {})
            .is_err()
    );
}

/// Every public operation of a sharded hash, on any connection; returns what
/// each one answered (as text) so two topologies can be compared.
fn every_operation(con: &mut dyn redis::ConnectionLike, topology: Topology) -> Vec<String> {
    let mut log = Vec::new();
    let mut note = |what: &str, v: &dyn std::fmt::Debug| log.push(format!("{what}: {v:?}"));
    let limits = ListpackLimits::from_server(con).unwrap();
    note("limits", &limits);
    let (planned, p) = ShardedHash::planned(con, "planned", 5_000).unwrap();
    let planned = planned.topology(topology);
    note("plan", &p.shards);
    let h = ShardedHash::new("users", 16).unwrap().topology(topology);
    note("set new", &h.set(con, "alice", "1").unwrap());
    note("set again", &h.set(con, "alice", "2").unwrap());
    note(
        "set_if_absent",
        &h.set_if_absent(con, "alice", "3").unwrap(),
    );
    note(
        "set_if_absent new",
        &h.set_if_absent(con, "bob", "b").unwrap(),
    );
    note("get", &h.get::<String>(con, "alice").unwrap());
    note("get missing", &h.get::<String>(con, "nobody").unwrap());
    let pairs: Vec<(String, String)> = (0..200)
        .map(|i| (format!("u{i}"), format!("v{i}")))
        .collect();
    note("set_many", &h.set_many(con, &pairs).unwrap());
    let again: Vec<(String, String)> = (150..260)
        .map(|i| (format!("u{i}"), format!("w{i}")))
        .collect();
    note(
        "set_if_absent_many",
        &h.set_if_absent_many(con, &again).unwrap(),
    );
    let fields: Vec<String> = (0..270).step_by(7).map(|i| format!("u{i}")).collect();
    let got = h.get_many::<String, _>(con, &fields).unwrap();
    assert_eq!(got[0].as_deref(), Some("v0"));
    assert_eq!(got.last().unwrap(), &None, "u266 was never written");
    note("get_many", &got);
    note("exists", &h.exists(con, "u3").unwrap());
    note("delete", &h.delete(con, "u3").unwrap());
    note("delete again", &h.delete(con, "u3").unwrap());
    note("exists after delete", &h.exists(con, "u3").unwrap());
    note("incr", &h.incr(con, "count", 5).unwrap());
    note("incr again", &h.incr(con, "count", -7).unwrap());
    note("len", &h.len(con).unwrap());
    note("is_empty", &h.is_empty(con).unwrap());
    note("inspect all", &h.inspect(con, 100).unwrap());
    note("inspect some", &h.inspect(con, 5).unwrap());
    note("planned empty", &planned.is_empty(con).unwrap());

    // Not strict: plain HSET / HSETNX batches.
    let loose = ShardedHash::new("loose", 12)
        .unwrap()
        .strict(false)
        .topology(topology);
    note("loose set_many", &loose.set_many(con, &pairs).unwrap());
    note(
        "loose set_if_absent_many",
        &loose.set_if_absent_many(con, &again).unwrap(),
    );
    let long = "x".repeat(100);
    note("loose long", &loose.set(con, "long", &long).unwrap());
    note("loose incr", &loose.incr(con, "n", 3).unwrap());
    note("loose len", &loose.len(con).unwrap());
    let health = loose.inspect(con, 100).unwrap();
    assert_eq!(health.converted, 1);
    note("loose inspect", &health);

    // Strict shards of at most 4 fields: a full shard refuses its part of a
    // batch (typed) while the other shards' parts are written.
    let tiny = ListpackLimits {
        entries: 4,
        value: 64,
    };
    // 8 ids per shard, at most 4 fields: shards 0 (ids 0-7) and 1 (8-15) are
    // filled to the limit first.
    let small = ShardedHash::by_id("small", 8, 99)
        .unwrap()
        .with_limits(tiny)
        .topology(topology);
    let first: Vec<(String, String)> = (0..4)
        .chain(8..12)
        .map(|i| (i.to_string(), "a".into()))
        .collect();
    note("small set_many", &small.set_many(con, &first).unwrap());
    match small
        .set_many(con, &[("3", "x"), ("4", "x"), ("16", "x")])
        .map_err(Error::into_kind)
    {
        Err(ErrorKind::ShardFull { .. }) => {}
        other => panic!("expected ShardFull, got {other:?}"),
    }
    // Shard 0's part was refused whole; shard 2's part was written.
    let after = small.get_many::<String, _>(con, &["3", "4", "16"]).unwrap();
    assert_eq!(after, [Some("a".to_string()), None, Some("x".to_string())]);
    note("small incr existing", &small.incr(con, "0", 1));
    match small.incr(con, "5", 1).map_err(Error::into_kind) {
        Err(ErrorKind::ShardFull { .. }) => {}
        other => panic!("expected ShardFull, got {other:?}"),
    }
    // Batches of 6: 0-5 (shard 0 full: 6 rejected), 6-11 (2 rejected, 4
    // present), 12-17 (4 rejected; 16 present, 17 inserted), 18-19 (inserted).
    let imported = small
        .import(
            con,
            (0..20).map(|i| (i.to_string(), format!("i{i}"))),
            6,
            |_| {},
        )
        .unwrap();
    assert_eq!(
        (imported.inserted, imported.present, imported.rejected),
        (3, 5, 12)
    );
    note("small import", &imported);
    let extra = small
        .import(con, [("3", "z"), ("13", "z"), ("77", "z")], 10, |_| {})
        .unwrap();
    assert_eq!((extra.inserted, extra.present, extra.rejected), (1, 1, 1));
    note("small import full shard", &extra);

    // Streaming import of lines, strict and not.
    let text = "alpha\n\nbeta\ngamma\n".repeat(40);
    let lines = ShardedHash::new("lines", 8).unwrap().topology(topology);
    let report = lines
        .import_lines(
            con,
            text.as_bytes(),
            ImportOptions {
                batch: 17,
                ..ImportOptions::default()
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(report.inserted, 120);
    assert_eq!(report.rejected, 40);
    note("import_lines", &report);
    let tsv = "a\t1\nb\t2\nno tab\nc\t3\n";
    let loose_lines = ShardedHash::new("tsv", 8)
        .unwrap()
        .strict(false)
        .topology(topology);
    let report = loose_lines
        .import_lines(
            con,
            tsv.as_bytes(),
            ImportOptions {
                format: LineFormat::Tsv,
                batch: 2,
                ..ImportOptions::default()
            },
            |_| {},
        )
        .unwrap();
    note("import_lines tsv", &report);
    note(
        "tsv get",
        &loose_lines
            .get_many::<String, _>(con, &["a", "b", "c"])
            .unwrap(),
    );
    log
}

/// Every field of every shard of the hashes `every_operation` writes.
fn dump(con: &mut dyn redis::ConnectionLike) -> Vec<(String, Vec<(String, String)>)> {
    let hashes = [
        ShardedHash::new("users", 16).unwrap(),
        ShardedHash::new("loose", 12).unwrap(),
        ShardedHash::by_id("small", 8, 99).unwrap(),
        ShardedHash::new("lines", 8).unwrap(),
        ShardedHash::new("tsv", 8).unwrap(),
    ];
    let mut out = Vec::new();
    for h in &hashes {
        for key in h.shard_keys() {
            let mut all: Vec<(String, String)> =
                redis::cmd("HGETALL").arg(&key).query(con).unwrap();
            all.sort();
            out.push((key, all));
        }
    }
    out
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let server = support::server();
    let mut one = server.connection();
    let expected = every_operation(&mut one, Topology::Standalone);
    let expected_data = dump(&mut one);

    let cluster = support::cluster();
    let mut con = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    assert_eq!(Topology::detect(&mut con).unwrap(), Topology::Cluster);
    let got = every_operation(&mut con, Topology::Cluster);
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e, g);
    }
    assert_eq!(expected.len(), got.len());
    assert_eq!(dump(&mut con), expected_data);
    // The shards really live on different nodes.
    let per_node: Vec<i64> = cluster
        .nodes()
        .iter()
        .map(|n| support::dbsize(&mut n.connection()))
        .collect();
    assert!(per_node.iter().all(|&n| n > 0), "{per_node:?}");
    assert_eq!(per_node.iter().sum::<i64>(), support::dbsize(&mut one));
}
