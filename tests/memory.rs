//! Big allocations never exceed what the server can hold: a Bloom filter's
//! blocks, a dense packed shard, a bitmap grown to a high uid or a JSHash
//! offset are refused with `ErrorKind::NotEnoughMemory` (`needed`,
//! `available`) before anything is written when they do not fit under
//! `maxmemory` (or a filter's ceiling), and strings beyond the server's
//! `proto-max-bulk-len` are refused before a script's first write. Every
//! body runs through both drivers against a real server (and the spread
//! filter on a real cluster).

mod support;

use chrono::NaiveDate;
use redis_patterns::bloom::{Bloom, BloomBuilder, JsHashBloom};
use redis_patterns::login_log::LoginLog;
use redis_patterns::packed::{Layout, Le, PackedRecords};
use redis_patterns::signin::SignIn;
use redis_patterns::{ErrorKind, MemoryLimit, scripts};
use redis_patterns_test_support::LocalServer;
use support::Driver;

fn dbsize(server: &LocalServer) -> i64 {
    support::dbsize(&mut server.connection())
}

/// The figures of a memory refusal; panics on anything else.
fn refusal<T: std::fmt::Debug>(
    r: redis_patterns::Result<T>,
) -> (u64, u64, MemoryLimit, Option<&'static str>) {
    match r.map_err(redis_patterns::Error::into_kind) {
        Err(ErrorKind::NotEnoughMemory {
            needed,
            available,
            limit,
            script,
            ..
        }) => {
            assert!(needed > available, "{needed} <= {available}");
            (needed, available, limit, script)
        }
        other => panic!("expected NotEnoughMemory, got {other:?}"),
    }
}

const MB: u64 = 1 << 20;

/// A sized filter for `n` items at a 1 % false-positive rate.
fn filter(name: &str, n: u64) -> BloomBuilder {
    Bloom::builder(name).expected(n).fp_rate(0.01)
}

#[test]
fn a_filter_beyond_maxmemory_is_refused_and_allocates_nothing() {
    let server = support::server_with(&["--maxmemory", "64mb"]);
    support::each_driver(&server, |d| {
        for spread in [false, true] {
            let before = support::used_memory(&server);
            let big = filter("huge", 1_000_000_000).spread_blocks(spread);
            let (needed, available, limit, script) = refusal(d.run(big.create()));
            assert_eq!(limit, MemoryLimit::Maxmemory);
            assert_eq!(script, None, "refused before any script ran");
            assert!(needed > 1_198_000_000, "{needed}");
            assert!(available < 64 * MB, "{available}");
            let after = support::used_memory(&server);
            assert!(
                after.abs_diff(before) < MB,
                "spread {spread}: used_memory {before} -> {after}"
            );
            assert_eq!(dbsize(&server), 0);
        }
        // What fits is created.
        let bf = d.run(Bloom::create("small", 100_000, 0.01)).unwrap();
        assert_eq!(d.run(bf.add("x")).unwrap(), Some(true));
    });
}

#[test]
fn a_spread_filter_is_checked_on_every_node_that_holds_a_block() {
    let cluster = redis_patterns_test_support::LocalCluster::builder()
        .args(&["--maxmemory", "64mb"])
        .start()
        .expect("a cluster with maxmemory");
    support::each_cluster_driver(&cluster, |d| {
        for spread in [false, true] {
            let big = filter("huge", 300_000_000).spread_blocks(spread);
            let (needed, available, limit, _) = refusal(d.run(big.create()));
            assert_eq!(limit, MemoryLimit::Maxmemory);
            assert!(needed > 64 * MB && available < 64 * MB);
            for node in cluster.nodes() {
                assert_eq!(support::dbsize(&mut node.connection()), 0);
            }
        }
        // 3 x 20 MB blocks on three nodes fit, though not on one.
        let wide = filter("wide", 50_000_000)
            .max_block_bytes(20 * MB)
            .spread_blocks(true);
        let bf = d.run(wide.create()).unwrap_or_else(|e| panic!("{e}"));
        assert!(bf.block_keys().len() >= 3);
        assert_eq!(d.run(bf.add("x")).unwrap(), Some(true));
        d.run(bf.destroy()).unwrap();
    });
}

#[test]
fn a_filter_above_the_ceiling_is_refused_without_maxmemory() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let (needed, available, limit, _) =
            refusal(d.run(Bloom::create("huge", 4_000_000_000, 0.01)));
        assert_eq!(limit, MemoryLimit::Ceiling);
        assert_eq!(
            available,
            redis_patterns::bloom::BloomParams::DEFAULT_MAX_MEMORY
        );
        assert!(needed > 4 << 30);
        assert_eq!(dbsize(&server), 0);
    });
}

#[test]
fn raising_the_ceiling_is_an_explicit_opt_in() {
    let server = support::server();
    support::each_driver(&server, |d| {
        // A ceiling lowered for the test stands for the default: a
        // 1.2 MB filter is above 1 MiB.
        let sized = || filter("f", 1_000_000);
        let (needed, available, limit, _) = refusal(d.run(sized().max_memory(MB).create()));
        assert_eq!((available, limit), (MB, MemoryLimit::Ceiling));
        assert!(needed > 1_198_000 && needed < 2 * MB, "{needed}");
        assert_eq!(dbsize(&server), 0);
        let bf = d.run(sized().max_memory(2 * MB).create()).unwrap();
        assert_eq!(d.run(bf.add("alice")).unwrap(), Some(true));
        assert!(d.run(bf.exists("alice")).unwrap());
    });
}

#[test]
fn blocks_are_created_by_calls_that_check_the_headroom_themselves() {
    let server = support::server_with(&["--maxmemory", "16mb"]);
    support::each_driver(&server, |d| {
        // 32 MiB blocks, sent as another client would (no Rust-side check).
        let bits = 32 * 8 * MB as i64 - 1;
        let (needed, _, limit, script) =
            refusal(d.run(scripts::bloom::init_block("bloom:{raw}:0", bits, true)));
        assert_eq!(
            (needed, limit, script),
            (32 * MB, MemoryLimit::Maxmemory, Some("bloom.init_block"))
        );
        let (_, _, _, script) = refusal(d.run(scripts::bloom::create(
            "bloom:{raw}",
            &["bloom:{raw}:0", "bloom:{raw}:1"],
            100,
            7,
            10,
            "0.01",
            &format!("{bits},{bits}"),
            "murmur3-dh",
            1,
            false,
        )));
        assert_eq!(script, Some("bloom.create"));
        assert_eq!(dbsize(&server), 0);
    });
}

#[test]
fn a_create_that_fails_on_a_block_deletes_the_blocks_it_created() {
    let server = support::server();
    support::each_driver(&server, |d| {
        // Several blocks on every server (libc plans one where it can).
        let probe = || filter("probe", 1_000_000).max_block_bytes(512 << 10);
        let plan = d.run(probe().create()).unwrap();
        let keys = plan.block_keys().to_vec();
        d.run(plan.destroy()).unwrap();
        assert!(keys.len() >= 2);
        // The last block's key holds something else: its init_block refuses.
        let last = keys.last().unwrap();
        let _: i64 = d.cmd(last, redis::cmd("SETBIT").arg(last).arg(5).arg(1));
        match d
            .run(probe().create())
            .map_err(redis_patterns::Error::into_kind)
        {
            Err(ErrorKind::BloomConfigMismatch { .. }) => {}
            other => panic!("expected BloomConfigMismatch, got {other:?}"),
        }
        for key in &keys[..keys.len() - 1] {
            let exists: i64 = d.cmd(key, redis::cmd("EXISTS").arg(key));
            assert_eq!(exists, 0, "{key} was created and must be gone");
        }
        let kept: i64 = d.cmd(last, redis::cmd("BITCOUNT").arg(last));
        assert_eq!(kept, 1, "the stranger's data is untouched");
    });
}

#[test]
fn growing_a_packed_shard_beyond_maxmemory_is_refused() {
    let server = support::server_with(&["--maxmemory", "16mb"]);
    support::each_driver(&server, |d| {
        // 8 M ids of 4 bytes: 32 MiB shards.
        for layout in [Layout::Dense, Layout::Sparse] {
            let records = PackedRecords::builder("pk", Le::<u32>::new(), 100_000_000)
                .ids_per_shard(8 << 20)
                .layout(layout)
                .build()
                .unwrap();
            let high = (8 << 20) - 1; // the shard's last record
            let field = redis_patterns::packed::IntField {
                offset: 0,
                size: 4,
                signed: false,
            };
            let cases = [
                ("packed.put", d.run(records.set(high, &7)).map(drop)),
                ("packed.add", d.run(records.add(high, field, 1)).map(drop)),
                (
                    "packed.swap",
                    d.run(records.compare_and_set(high, &0, &1)).map(drop),
                ),
            ];
            for (name, r) in cases {
                let (needed, _, limit, script) = refusal(r);
                assert_eq!((limit, script), (MemoryLimit::Maxmemory, Some(name)));
                assert_eq!(needed, 32 * MB, "{layout:?} {name}");
            }
            assert_eq!(dbsize(&server), 0, "{layout:?}");
        }
        // Default shards (64 KiB) are left to the server's own check.
        let small = PackedRecords::new("ok", Le::<u32>::new(), 1_000_000).unwrap();
        d.run(small.set(5, &9)).unwrap();
        assert_eq!(d.run(small.get(5)).unwrap(), 9);
    });
}

#[test]
fn a_bitmap_grown_to_a_high_uid_beyond_maxmemory_is_refused() {
    let server = support::server_with(&["--maxmemory", "16mb"]);
    let day = NaiveDate::from_ymd_opt(2024, 5, 3).unwrap();
    support::each_driver(&server, |d| {
        let high = 1_000_000_000; // a 125 MB bitmap
        let signin = SignIn::builder().max_uid(u32::MAX.into()).build().unwrap();
        let (needed, _, _, script) = refusal(d.run(signin.sign_in(high, day)));
        assert_eq!((needed, script), (high / 8 + 1, Some("signin.mark")));
        let log = LoginLog::builder()
            .max_uid(u32::MAX.into())
            .build()
            .unwrap();
        let (_, _, _, script) = refusal(d.run(log.record("client", high, day)));
        assert_eq!(script, Some("login_log.record"));
        let php = JsHashBloom::new("bloom_user_email").unwrap();
        let far = (0..)
            .map(|i| format!("user{i}@example.com"))
            .find(|x| php.offset(x.as_bytes()).unwrap() > 1_000_000_000)
            .unwrap();
        let (_, _, _, script) = refusal(d.run(php.add(&far)));
        assert_eq!(script, Some("bloom.jshash_add"));
        assert_eq!(dbsize(&server), 0);
        // Low uids grow little and go through.
        assert_eq!(d.run(signin.sign_in(1000, day)).unwrap(), Some(true));
        assert_eq!(d.run(log.record("client", 1000, day)).unwrap(), Some(true));
    });
}

/// Empties `server` (synchronously: a server that frees overwritten or
/// deleted values in a background thread, as Valkey 8+ does by default,
/// would count the old ones against maxmemory until that thread catches up,
/// which under load made a refill fail with OOM), then fills it with about
/// `mb` MiB of 1 MiB strings.
fn fill(server: &LocalServer, mb: usize) {
    let mut con = server.connection();
    let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut con).unwrap();
    let value = vec![b'x'; MB as usize];
    for i in 0..mb {
        let _: () = redis::cmd("SET")
            .arg(format!("fill:{i}"))
            .arg(&value)
            .query(&mut con)
            .unwrap();
    }
}

#[test]
fn under_allkeys_policies_the_data_set_counts_as_free() {
    let day = NaiveDate::from_ymd_opt(2024, 5, 3).unwrap();
    let signin = SignIn::builder().max_uid(u32::MAX.into()).build().unwrap();
    let uid = 15 * 8 * MB; // a 15 MiB bitmap
    let run = |policy: &str, d: &mut Driver, server: &LocalServer| {
        fill(server, 20);
        let r = d.run(signin.sign_in(uid, day));
        if policy == "noeviction" {
            refusal(r);
        } else {
            assert_eq!(r.unwrap_or_else(|e| panic!("{policy}: {e}")), Some(true));
        }
    };
    for policy in ["noeviction", "allkeys-lru"] {
        let server = support::server_with(&["--maxmemory", "32mb", "--maxmemory-policy", policy]);
        support::each_driver(&server, |d| run(policy, d, &server));
    }
}

#[test]
fn strings_beyond_proto_max_bulk_len_are_refused_before_any_write() {
    let server = support::server_with(&["--proto-max-bulk-len", "1mb"]);
    support::each_driver(&server, |d| {
        // 2 MiB shards: the first write would have to build a string over
        // the limit.
        let records = PackedRecords::builder("pk", Le::<u32>::new(), 10_000_000)
            .ids_per_shard(512 * 1024)
            .build()
            .unwrap();
        match d
            .run(records.set_many(&[(1, 5), (2, 6)]))
            .map_err(redis_patterns::Error::into_kind)
        {
            Err(ErrorKind::InvalidArgument {
                script: Some("packed.put"),
                reason,
                ..
            }) => assert!(reason.contains("proto-max-bulk-len"), "{reason}"),
            other => panic!("expected the script's refusal, got {other:?}"),
        }
        assert_eq!(dbsize(&server), 0);
        // A filter is planned within the limit: 2.4 MB in blocks of <= 1 MiB.
        let bf = d.run(Bloom::create("f", 2_000_000, 0.01)).unwrap();
        assert!(bf.block_keys().len() >= 3, "{:?}", bf.params().block_bits);
        assert!(bf.params().block_bytes().all(|b| b <= MB));
        assert_eq!(d.run(bf.add("x")).unwrap(), Some(true));
        d.run(bf.clear()).unwrap();
        // One block over the limit, as another client may send it: refused
        // before the config is written.
        let over = (2 * 8 * MB - 1) as i64;
        match d
            .run(scripts::bloom::create(
                "bloom:{raw}",
                &["bloom:{raw}:0"],
                100,
                7,
                10,
                "0.01",
                &over.to_string(),
                "murmur3-dh",
                1,
                false,
            ))
            .map_err(redis_patterns::Error::into_kind)
        {
            Err(ErrorKind::InvalidArgument {
                script: Some("bloom.create"),
                ..
            }) => {}
            other => panic!("expected the script's refusal, got {other:?}"),
        }
        let raw: i64 = d.cmd("bloom:{raw}", redis::cmd("EXISTS").arg("bloom:{raw}"));
        assert_eq!(raw, 0);
    });
}

#[test]
fn a_user_denied_info_keeps_the_ceiling_and_the_servers_own_check() {
    let server = support::server_with(&["--maxmemory", "64mb"]);
    let acl = |rule: &str| {
        let _: () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg("noinfo")
            .arg("on")
            .arg(">pw")
            .arg("~*")
            .arg("&*")
            .arg("+@all")
            .arg(rule)
            .query(&mut server.connection())
            .unwrap();
    };
    let url = format!("redis://noinfo:pw@127.0.0.1:{}/", server.port());
    let day = NaiveDate::from_ymd_opt(2024, 5, 3).unwrap();
    // Connecting asks INFO cluster; the ACL then takes INFO away from the
    // open connections.
    acl("+info");
    let drivers = support::drivers(&url);
    acl("-info");
    for mut d in drivers {
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut server.connection())
            .unwrap();
        let mem = d
            .run(redis_patterns::core::ServerMemory::read("any"))
            .unwrap();
        assert!(!mem.reported);
        // Usage unknown: maxmemory itself (CONFIG GET) is the bound.
        assert_eq!(mem.available(), Some(64 * MB));
        let bf = d.run(Bloom::create("f", 1_000_000, 0.01)).unwrap();
        assert_eq!(d.run(bf.add("x")).unwrap(), Some(true));
        let (_, _, limit, _) = refusal(d.run(Bloom::create("big", 1_000_000_000, 0.01)));
        assert_eq!(limit, MemoryLimit::Maxmemory);
        let (_, _, limit, _) = refusal(d.run(Bloom::create("huge", 4_000_000_000, 0.01)));
        assert_eq!(limit, MemoryLimit::Ceiling);
        // The scripts skip their own headroom check (INFO denied); the write
        // goes through under the server's own check.
        let signin = SignIn::builder().max_uid(u32::MAX.into()).build().unwrap();
        assert_eq!(d.run(signin.sign_in(8 * MB, day)).unwrap(), Some(true));
    }
}

#[test]
fn a_user_denied_getbit_gets_the_servers_refusal_not_a_length_refusal() {
    // The proto-max-bulk-len probe (GETBIT, lua/includes/bulk_len.lua)
    // means "too long" only for GETBIT's out-of-range error; any other
    // refusal is raised as the server gave it (NOPERM, on Redis 7.0
    // "ERR The user executing the script can't run this command", on
    // Valkey "ERR ACL failure in script").
    let server = support::server();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("nogetbit")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-getbit")
        .query(&mut server.connection())
        .unwrap();
    let url = format!("redis://nogetbit:pw@127.0.0.1:{}/", server.port());
    for mut d in support::drivers(&url) {
        let records = PackedRecords::builder("pk", Le::<u32>::new(), 1000)
            .build()
            .unwrap();
        let denied = [
            d.run(records.set_many(&[(1, 5)])).map(|_| ()),
            d.run(scripts::bloom::init_block("b", 1023, true).unwrap())
                .map(|_| ()),
        ];
        for r in denied {
            let err = r.expect_err("GETBIT is denied");
            let text = err.to_string();
            assert!(
                text.contains("NOPERM")
                    || text.contains("can't run this command")
                    || text.contains("ACL failure"),
                "{text}"
            );
            assert_eq!(
                err.server_kind(),
                Some(redis_patterns::ServerErrorKind::NoPermission),
                "typed as a permission refusal: {text}"
            );
            assert!(
                !matches!(err.into_kind(), ErrorKind::InvalidArgument { .. }),
                "{text}"
            );
        }
        assert_eq!(dbsize(&server), 0);
    }
}
