//! Bloom filters against a real redis-server (one per test).

mod support;

use redis_patterns::bloom::{Bloom, BloomOptions, Engine, LoadProgress, SeedBloom};
use redis_patterns::hash::js_hash;
use redis_patterns::scripts;
use redis_patterns::{Error, ErrorKind};

fn items(prefix: &str, range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}")).collect()
}

fn opts(engine: Engine) -> BloomOptions {
    BloomOptions {
        engine,
        ..BloomOptions::default()
    }
}

#[test]
fn add_then_exists_with_both_engines() {
    let server = support::server();
    let mut con = server.connection();
    for (name, engine) in [("bf", Engine::Bitfield), ("sc", Engine::Script)] {
        let bf = Bloom::create_with(&mut con, name, 10_000, 0.01, &opts(engine)).unwrap();
        assert!(bf.add(&mut con, "alice").unwrap(), "first add is new");
        assert!(
            !bf.add(&mut con, "alice").unwrap(),
            "second add is maybe-present"
        );
        assert!(bf.exists(&mut con, "alice").unwrap());
        assert!(!bf.exists(&mut con, "bob").unwrap());
        // Per-item flags, including a repeat inside the batch.
        let flags = bf
            .multi_add(&mut con, &["bob", "carol", "bob", "alice"])
            .unwrap();
        assert_eq!(flags, vec![true, true, false, false]);
        let found = bf
            .multi_exists(&mut con, &["alice", "bob", "carol", "dave"])
            .unwrap();
        assert_eq!(found, vec![true, true, true, false]);
        assert!(bf.multi_add::<&str>(&mut con, &[]).unwrap().is_empty());
        // Empty items are ordinary items in sized filters.
        assert!(bf.add(&mut con, "").unwrap());
        assert!(bf.exists(&mut con, "").unwrap());
    }
}

#[test]
fn engines_write_identical_bits() {
    let server = support::server();
    let mut con = server.connection();
    let a = Bloom::create_with(&mut con, "a", 5_000, 0.02, &opts(Engine::Bitfield)).unwrap();
    let b = Bloom::create_with(&mut con, "b", 5_000, 0.02, &opts(Engine::Script)).unwrap();
    let xs = items("item:", 0..3000);
    let fa = a.multi_add(&mut con, &xs).unwrap();
    let fb = b.multi_add(&mut con, &xs).unwrap();
    assert_eq!(fa, fb);
    for (ka, kb) in a.block_keys().iter().zip(b.block_keys()) {
        let va: Vec<u8> = redis::cmd("GET").arg(ka).query(&mut con).unwrap();
        let vb: Vec<u8> = redis::cmd("GET").arg(kb).query(&mut con).unwrap();
        assert_eq!(va, vb);
    }
    // The bits are exactly where `locate` says.
    for x in xs.iter().take(50) {
        let (block, offsets) = a.locate(x.as_bytes());
        for o in offsets {
            let bit: i64 = redis::cmd("GETBIT")
                .arg(&a.block_keys()[block])
                .arg(o)
                .query(&mut con)
                .unwrap();
            assert_eq!(bit, 1);
        }
    }
}

#[test]
fn batched_adds_set_exactly_the_bits_locate_names_in_every_block() {
    let server = support::server();
    let mut con = server.connection();
    for engine in [Engine::Bitfield, Engine::Script] {
        let a = Bloom::create_with(&mut con, "a", 1_000_000, 0.01, &opts(engine)).unwrap();
        let b = Bloom::create_with(&mut con, "b", 1_000_000, 0.01, &opts(engine)).unwrap();
        assert!(a.block_keys().len() >= 2);
        let xs = items("bit:", 0..3000);
        a.multi_add(&mut con, &xs).unwrap();
        // The same items, one SETBIT per bit from `locate`.
        let mut pipe = redis::pipe();
        for x in &xs {
            let (block, offsets) = b.locate(x.as_bytes());
            for o in offsets {
                pipe.cmd("SETBIT")
                    .arg(&b.block_keys()[block])
                    .arg(o)
                    .arg(1)
                    .ignore();
            }
        }
        let _: () = pipe.query(&mut con).unwrap();
        let set = a.bits_set(&mut con).unwrap();
        assert!(set.iter().all(|&n| n > 0), "every block got items: {set:?}");
        for (ka, kb) in a.block_keys().iter().zip(b.block_keys()) {
            let va: Vec<u8> = redis::cmd("GET").arg(ka).query(&mut con).unwrap();
            let vb: Vec<u8> = redis::cmd("GET").arg(kb).query(&mut con).unwrap();
            assert!(va == vb, "{engine:?}: {ka} differs from {kb}");
        }
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    }
}

#[test]
fn no_false_negatives_and_a_plausible_false_positive_rate() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create(&mut con, "users", 20_000, 0.01).unwrap();
    let members = items("member:", 0..20_000);
    for chunk in members.chunks(1000) {
        bf.multi_add(&mut con, chunk).unwrap();
    }
    for chunk in members.chunks(1000) {
        assert!(bf.multi_exists(&mut con, chunk).unwrap().iter().all(|&b| b));
    }
    let others = items("other:", 0..20_000);
    let mut fp = 0;
    for chunk in others.chunks(1000) {
        fp += bf
            .multi_exists(&mut con, chunk)
            .unwrap()
            .iter()
            .filter(|&&b| b)
            .count();
    }
    // Expected ~200 (1 %); the hashes are deterministic, so this is not flaky.
    assert!((100..=300).contains(&fp), "false positives: {fp}");
    let count = bf.approx_count(&mut con).unwrap();
    assert!((19_000..=21_000).contains(&count), "approx count {count}");
    let info = bf.info(&mut con).unwrap();
    assert_eq!(info.approx_count, count);
    assert!(info.current_fp_rate > 0.005 && info.current_fp_rate < 0.02);
}

#[test]
fn config_is_written_once_and_checked() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create(&mut con, "emails", 1000, 0.01).unwrap();
    bf.add(&mut con, "x").unwrap();
    let before = support::all_keys(&mut con);
    assert_eq!(
        before,
        bf.all_keys()
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    let stored: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(bf.config_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(stored["m"], bf.params().m.to_string());
    assert_eq!(stored["k"], "7");
    assert_eq!(stored["scheme"], "murmur3-dh");
    // Same parameters: opens it, keeps the data.
    let again = Bloom::create(&mut con, "emails", 1000, 0.01).unwrap();
    assert!(again.exists(&mut con, "x").unwrap());
    // Other parameters: typed error, nothing changed.
    match Bloom::create(&mut con, "emails", 2000, 0.01).map_err(Error::into_kind) {
        Err(ErrorKind::BloomConfigMismatch { detail }) => {
            assert!(detail.contains("stored"), "{detail}")
        }
        other => panic!("expected BloomConfigMismatch, got {other:?}"),
    }
    let after: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(bf.config_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(stored, after);
    // Open without parameters reads them.
    let opened = Bloom::open(&mut con, "emails").unwrap();
    assert_eq!(opened.params(), bf.params());
    assert!(opened.exists(&mut con, "x").unwrap());
    assert!(matches!(
        Bloom::open(&mut con, "nope").map_err(Error::into_kind),
        Err(ErrorKind::BloomMissing { .. })
    ));
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let server = support::server();
    let mut con = server.connection();
    for p in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                Bloom::create(&mut con, "f", 1000, p).map_err(Error::into_kind),
                Err(ErrorKind::InvalidArgument { .. })
            ),
            "p = {p}"
        );
    }
    assert!(matches!(
        Bloom::create(&mut con, "f", 0, 0.01).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    let small = BloomOptions {
        max_bits: 1_000_000,
        ..BloomOptions::default()
    };
    match Bloom::create_with(&mut con, "f", 1_000_000, 0.01, &small).map_err(Error::into_kind) {
        Err(ErrorKind::InvalidArgument { reason, .. }) => {
            assert!(reason.contains("bound"), "{reason}")
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    assert!(matches!(
        Bloom::create(&mut con, "", 1000, 0.01).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        Bloom::create(&mut con, "a{b}", 1000, 0.01).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        Bloom::create(&mut con, "f", 1000, 1e-30).map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    let seed = SeedBloom::new("bloom_user_email").unwrap();
    assert!(matches!(
        seed.add(&mut con, "").map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        seed.multi_add(&mut con, &["ok@example.com", ""])
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(matches!(
        seed.exists(&mut con, "").map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
    assert!(SeedBloom::new("").is_err());
    assert_eq!(support::dbsize(&mut con), 0);
}

#[test]
fn scripts_refuse_bad_offsets_and_write_nothing() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create_with(&mut con, "f", 1000, 0.01, &opts(Engine::Script)).unwrap();
    let key = &bf.block_keys()[0];
    let bits = bf.params().block_bits[0] as i64;
    let before: Vec<u8> = redis::cmd("GET").arg(key).query(&mut con).unwrap();
    for offsets in [
        vec![1, 2, 3, 4, 5, 6, bits],
        vec![1, 2, 3],
        vec![-1, 1, 2, 3, 4, 5, 6],
    ] {
        // Sent raw (the typed wrapper refuses an offset outside the block
        // before sending; the count is the script's own check).
        let wrapper = scripts::bloom::add(key, bits, 7, &offsets);
        assert_eq!(wrapper.is_err(), offsets.len() == 7, "{offsets:?}");
        let args: Vec<String> = [bits, 7]
            .iter()
            .chain(&offsets)
            .map(|v| v.to_string())
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match support::raw_call::<Vec<i64>>(&scripts::BLOOM_ADD, &[key], &args)
            .invoke(&mut con)
            .map_err(Error::into_kind)
        {
            Err(
                e @ ErrorKind::InvalidArgument {
                    script: Some(_), ..
                },
            ) => {
                let detail = e.to_string();
                assert!(detail.contains("offset") || detail.contains("multiple"))
            }
            other => panic!("expected ScriptArgument, got {other:?}"),
        }
    }
    let after: Vec<u8> = redis::cmd("GET").arg(key).query(&mut con).unwrap();
    assert_eq!(before, after);
    // A block that does not exist is refused, not created.
    match scripts::bloom::add("bloom:{ghost}:0", bits, 7, &[1, 2, 3, 4, 5, 6, 7])
        .unwrap()
        .invoke(&mut con)
        .map_err(Error::into_kind)
    {
        Err(ErrorKind::BloomMissing { .. }) => {}
        other => panic!("expected BloomMissing, got {other:?}"),
    }
    let ghost: i64 = redis::cmd("EXISTS")
        .arg("bloom:{ghost}:0")
        .query(&mut con)
        .unwrap();
    assert_eq!(ghost, 0);
}

#[test]
fn create_script_refuses_bad_arguments_before_writing() {
    let server = support::server();
    let mut con = server.connection();
    let cfg = "bloom:{raw}";
    let b0 = "bloom:{raw}:0";
    let b1 = "bloom:{raw}:1";
    let two: &[&str] = &[b0, b1];
    let one: &[&str] = &[b0];
    let none: &[&str] = &[];
    // (blocks, m, k, n, p, block_bits, scheme, version, spread)
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&[&str], i64, i64, i64, &str, &str, &str, i64, i64)> = vec![
        (two, 100, 7, 10, "0.01", "1023", "murmur3-dh", 1, 0), // 2 keys, 1 size
        (one, 100, 7, 10, "0.01", "1023,1023", "murmur3-dh", 1, 0), // 1 key, 2 sizes
        (one, 100, 7, 10, "0.01", "1024", "murmur3-dh", 1, 0), // not 8x-1
        (one, 100, 7, 10, "0.01", "x", "murmur3-dh", 1, 0),
        (two, 100, 7, 10, "0.01", "1023,,1023", "murmur3-dh", 1, 0),
        (one, 100, 7, 10, "0.01", "", "murmur3-dh", 1, 0),
        (one, 100, 0, 10, "0.01", "1023", "murmur3-dh", 1, 0),
        (one, 100, 65, 10, "0.01", "1023", "murmur3-dh", 1, 0),
        (one, 0, 7, 10, "0.01", "1023", "murmur3-dh", 1, 0),
        (one, 100, 7, 0, "0.01", "1023", "murmur3-dh", 1, 0),
        (one, 100, 7, 10, "1.5", "1023", "murmur3-dh", 1, 0),
        (one, 100, 7, 10, "nope", "1023", "murmur3-dh", 1, 0),
        (one, 5000, 7, 10, "0.01", "1023", "murmur3-dh", 1, 0), // blocks < m
        (one, 100, 7, 10, "0.01", "1023", "", 1, 0),
        (one, 100, 7, 10, "0.01", "1023", "murmur3-dh", 0, 0),
        (one, 100, 7, 10, "0.01", "1023", "murmur3-dh", 1, 2),
        (one, 100, 7, 10, "0.01", "1023", "murmur3-dh", 1, 1), // spread takes no blocks
        (none, 100, 7, 10, "0.01", "1023", "murmur3-dh", 1, 0), // no spread needs them
    ];
    for (blocks, m, k, n, p, bits, scheme, version, spread) in cases {
        // Sent raw, as another language may send it; the typed wrapper
        // refuses what its types can express before sending (same name).
        let mut keys = vec![cfg];
        keys.extend_from_slice(blocks);
        let nums = [m, k, n, version, spread].map(|v| v.to_string());
        let args = [
            &nums[0], &nums[1], &nums[2], p, bits, scheme, &nums[3], &nums[4],
        ];
        let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
        let call = support::raw_call::<i64>(&scripts::BLOOM_CREATE, &keys, &args);
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let wrapper = scripts::typed_call("bloom.create", &keys, &bytes);
        match call.invoke(&mut con).map_err(Error::into_kind) {
            Err(ErrorKind::InvalidArgument {
                script: Some(_),
                name,
                ..
            }) => {
                assert!(!name.is_empty());
                if let Some(Err(e)) = wrapper {
                    assert!(
                        matches!(e.kind(), ErrorKind::InvalidArgument { script: None, name: n, .. } if *n == name),
                        "{e:?} vs {name}"
                    );
                }
            }
            other => panic!(
                "{blocks:?} {m} {k} {n} {p} {bits:?} {scheme:?} {version} {spread}: expected ScriptArgument, got {other:?}"
            ),
        }
        assert_eq!(
            support::dbsize(&mut con),
            0,
            "{blocks:?} {bits:?}: nothing written"
        );
    }
    // The same call with good arguments creates config and blocks.
    let created = scripts::bloom::create(
        cfg,
        two,
        100,
        7,
        10,
        "0.01",
        "1023,1023",
        "murmur3-dh",
        1,
        false,
    )
    .unwrap()
    .invoke(&mut con)
    .unwrap();
    assert_eq!(created, 1);
    assert_eq!(support::dbsize(&mut con), 3);
}

#[test]
fn a_lost_block_is_an_error_with_both_engines() {
    let server = support::server();
    let mut con = server.connection();
    for engine in [Engine::Script, Engine::Bitfield] {
        let bf = Bloom::create_with(&mut con, "f", 1000, 0.01, &opts(engine)).unwrap();
        bf.add(&mut con, "x").unwrap();
        bf.destroy(&mut con).unwrap();
        assert_eq!(support::dbsize(&mut con), 0);
        assert!(matches!(
            bf.exists(&mut con, "x").map_err(Error::into_kind),
            Err(ErrorKind::BloomMissing { .. })
        ));
        assert!(matches!(
            bf.add(&mut con, "x").map_err(Error::into_kind),
            Err(ErrorKind::BloomMissing { .. })
        ));
        // It stays an error; the script engine wrote nothing, the BITFIELD
        // engine's re-created block keeps its sentinel cleared.
        assert!(matches!(
            bf.add(&mut con, "x").map_err(Error::into_kind),
            Err(ErrorKind::BloomMissing { .. })
        ));
        if engine == Engine::Script {
            assert_eq!(support::dbsize(&mut con), 0);
        }
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    }
}

#[test]
fn every_block_an_add_re_created_stays_lost() {
    let server = support::server();
    let mut con = server.connection();
    for spread in [false, true] {
        let o = BloomOptions {
            spread_blocks: spread,
            ..opts(Engine::Bitfield)
        };
        let bf = Bloom::create_with(&mut con, "f", 1_000_000, 0.01, &o).unwrap();
        assert!(bf.block_keys().len() >= 2, "{:?}", bf.params().block_bits);
        // One item in each of the first two blocks.
        let pick = |block: usize| {
            (0..10_000)
                .map(|i| format!("it{i}"))
                .find(|x| bf.locate(x.as_bytes()).0 == block)
                .unwrap()
        };
        let (a, b) = (pick(0), pick(1));
        bf.multi_add(&mut con, &[&a, &b]).unwrap();
        let _: () = redis::cmd("DEL")
            .arg(&bf.block_keys()[0])
            .arg(&bf.block_keys()[1])
            .query(&mut con)
            .unwrap();
        // One add touches both lost blocks (and re-creates both).
        assert!(matches!(
            bf.multi_add(&mut con, &[&a, &b]).map_err(Error::into_kind),
            Err(ErrorKind::BloomMissing { .. })
        ));
        // Both stay lost: neither answers "absent" or "present".
        for item in [&a, &b] {
            match bf.exists(&mut con, item).map_err(Error::into_kind) {
                Err(ErrorKind::BloomMissing { .. }) => {}
                other => {
                    panic!("spread {spread} item {item}: expected BloomMissing, got {other:?}")
                }
            }
        }
        bf.clear(&mut con).unwrap();
        assert!(!bf.exists(&mut con, &a).unwrap());
        assert!(!bf.exists(&mut con, &b).unwrap());
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    }
}

#[test]
fn counts_of_a_lost_block_are_an_error_not_empty() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create(&mut con, "f", 1_000_000, 0.01).unwrap();
    assert!(bf.block_keys().len() >= 2);
    bf.multi_add(&mut con, &items("c", 0..2000)).unwrap();
    assert!(bf.bits_set(&mut con).unwrap().iter().all(|&b| b > 0));
    let last = bf.block_keys().len() - 1;
    for lose in ["DEL", "SENTINEL"] {
        if lose == "DEL" {
            let _: () = redis::cmd("DEL")
                .arg(&bf.block_keys()[last])
                .query(&mut con)
                .unwrap();
        } else {
            // A block re-created by a stray write: length right, sentinel 0.
            let _: () = redis::cmd("SETBIT")
                .arg(&bf.block_keys()[last])
                .arg(bf.params().block_bits[last])
                .arg(0)
                .query(&mut con)
                .unwrap();
        }
        match bf.bits_set(&mut con).map_err(Error::into_kind) {
            Err(ErrorKind::BloomMissing { detail }) => {
                assert!(detail.contains(&bf.block_keys()[last]), "{detail}")
            }
            other => panic!("{lose}: expected BloomMissing, got {other:?}"),
        }
        assert!(matches!(
            bf.approx_count(&mut con).map_err(Error::into_kind),
            Err(ErrorKind::BloomMissing { .. })
        ));
        assert!(matches!(
            bf.info(&mut con).map_err(Error::into_kind),
            Err(ErrorKind::BloomMissing { .. })
        ));
    }
    // clear makes it usable again, and counts work.
    bf.clear(&mut con).unwrap();
    assert_eq!(bf.bits_set(&mut con).unwrap().iter().sum::<u64>(), 0);
    assert_eq!(bf.approx_count(&mut con).unwrap(), 0);
}

#[test]
fn clear_resets_bits_and_keeps_the_config() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create(&mut con, "f", 10_000, 0.01).unwrap();
    let xs = items("x", 0..500);
    bf.multi_add(&mut con, &xs).unwrap();
    assert!(bf.approx_count(&mut con).unwrap() > 400);
    let sizes: Vec<i64> = bf
        .block_keys()
        .iter()
        .map(|k| redis::cmd("STRLEN").arg(k).query(&mut con).unwrap())
        .collect();
    // An expiry on the first block survives clear, to the millisecond; the
    // other blocks stay without one.
    let at: i64 = 4_102_444_800_123; // 2100-01-01, an explicit instant
    let _: () = redis::cmd("PEXPIREAT")
        .arg(&bf.block_keys()[0])
        .arg(at)
        .query(&mut con)
        .unwrap();
    bf.clear(&mut con).unwrap();
    assert_eq!(bf.bits_set(&mut con).unwrap().iter().sum::<u64>(), 0);
    assert!(bf.multi_exists(&mut con, &xs).unwrap().iter().all(|&b| !b));
    for (j, key) in bf.block_keys().iter().enumerate() {
        let expiry: i64 = redis::cmd("PEXPIRETIME").arg(key).query(&mut con).unwrap();
        assert_eq!(expiry, if j == 0 { at } else { -1 }, "{key}");
        // Zeros, then the sentinel: the last bit of the last byte.
        let bytes: Vec<u8> = redis::cmd("GET").arg(key).query(&mut con).unwrap();
        let (last, zeros) = bytes.split_last().unwrap();
        assert_eq!(*last, 1, "{key}");
        assert!(zeros.iter().all(|&b| b == 0), "{key}");
    }
    let sizes_after: Vec<i64> = bf
        .block_keys()
        .iter()
        .map(|k| redis::cmd("STRLEN").arg(k).query(&mut con).unwrap())
        .collect();
    assert_eq!(sizes, sizes_after);
    assert_eq!(Bloom::open(&mut con, "f").unwrap().params(), bf.params());
    assert!(bf.add(&mut con, "again").unwrap());
}

#[test]
fn blocks_can_spread_over_slots() {
    let server = support::server();
    let mut con = server.connection();
    let o = BloomOptions {
        spread_blocks: true,
        ..BloomOptions::default()
    };
    let bf = Bloom::create_with(&mut con, "wide", 1_000_000, 0.01, &o).unwrap();
    assert!(bf.block_keys().len() >= 2);
    let slots: std::collections::BTreeSet<u16> = bf
        .block_keys()
        .iter()
        .map(|k| redis_patterns::keys::cluster_slot(k.as_bytes()))
        .collect();
    assert_eq!(slots.len(), bf.block_keys().len(), "{:?}", bf.block_keys());
    let xs = items("s", 0..5000);
    bf.multi_add(&mut con, &xs).unwrap();
    assert!(bf.multi_exists(&mut con, &xs).unwrap().iter().all(|&b| b));
    // Every block got items.
    assert!(bf.bits_set(&mut con).unwrap().iter().all(|&b| b > 0));
    let opened = Bloom::open(&mut con, "wide").unwrap();
    assert_eq!(opened.block_keys(), bf.block_keys());
    bf.clear(&mut con).unwrap();
    assert!(!bf.exists(&mut con, "s1").unwrap());
}

#[test]
fn spread_create_writes_the_config_last_and_refuses_leftovers() {
    let server = support::server();
    let mut con = server.connection();
    let o = BloomOptions {
        spread_blocks: true,
        ..BloomOptions::default()
    };
    // What a create that crashed between blocks and config leaves: the
    // first block, pristine, and no config. The retry adopts it.
    let probe = Bloom::create_with(&mut con, "probe", 1_000_000, 0.01, &o).unwrap();
    let (keys, bits) = (
        probe.block_keys().to_vec(),
        probe.params().block_bits.clone(),
    );
    assert!(keys.len() >= 2);
    probe.destroy(&mut con).unwrap();
    let re_keys =
        |name: &str| -> Vec<String> { keys.iter().map(|k| k.replace("probe", name)).collect() };
    let crashed = re_keys("crashed");
    let made: i64 = scripts::bloom::init_block(&crashed[0], bits[0] as i64, true)
        .unwrap()
        .invoke(&mut con)
        .unwrap();
    assert_eq!(made, 1);
    let bf = Bloom::create_with(&mut con, "crashed", 1_000_000, 0.01, &o).unwrap();
    assert_eq!(bf.block_keys(), &crashed[..]);
    assert!(bf.add(&mut con, "x").unwrap());
    assert!(bf.exists(&mut con, "x").unwrap());
    assert_eq!(
        Bloom::open(&mut con, "crashed").unwrap().params(),
        bf.params()
    );

    // A leftover block that holds data is refused, and no config is written
    // (so nothing claims the leftover's bits); the leftover is untouched.
    let stale = re_keys("stale");
    let _: () = redis::cmd("SETBIT")
        .arg(&stale[1])
        .arg(bits[1])
        .arg(1)
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("SETBIT")
        .arg(&stale[1])
        .arg(5)
        .arg(1)
        .query(&mut con)
        .unwrap();
    let before: Vec<u8> = redis::cmd("GET").arg(&stale[1]).query(&mut con).unwrap();
    match Bloom::create_with(&mut con, "stale", 1_000_000, 0.01, &o).map_err(Error::into_kind) {
        Err(ErrorKind::BloomConfigMismatch { detail }) => {
            assert!(detail.contains(&stale[1]), "{detail}")
        }
        other => panic!("expected BloomConfigMismatch, got {other:?}"),
    }
    let config: i64 = redis::cmd("EXISTS")
        .arg("bloom:{stale}")
        .query(&mut con)
        .unwrap();
    assert_eq!(config, 0, "no config next to a refused leftover");
    let after: Vec<u8> = redis::cmd("GET").arg(&stale[1]).query(&mut con).unwrap();
    assert_eq!(before, after);
    assert!(matches!(
        Bloom::open(&mut con, "stale").map_err(Error::into_kind),
        Err(ErrorKind::BloomMissing { .. })
    ));
    // Once the leftover is gone the retry succeeds (adopting the pristine
    // blocks the refused attempt created).
    let _: () = redis::cmd("DEL").arg(&stale[1]).query(&mut con).unwrap();
    let bf = Bloom::create_with(&mut con, "stale", 1_000_000, 0.01, &o).unwrap();
    assert_eq!(bf.bits_set(&mut con).unwrap().iter().sum::<u64>(), 0);

    // Creating an existing filter again opens it (its blocks hold data now).
    bf.multi_add(&mut con, &items("s", 0..500)).unwrap();
    let again = Bloom::create_with(&mut con, "stale", 1_000_000, 0.01, &o).unwrap();
    assert!(
        again
            .multi_exists(&mut con, &items("s", 0..500))
            .unwrap()
            .iter()
            .all(|&b| b)
    );
    // And a spread filter whose config exists but a block is gone is refused.
    let _: () = redis::cmd("DEL").arg(&stale[0]).query(&mut con).unwrap();
    assert!(matches!(
        Bloom::create_with(&mut con, "stale", 1_000_000, 0.01, &o).map_err(Error::into_kind),
        Err(ErrorKind::BloomMissing { .. })
    ));
}

#[test]
fn four_writers_with_overlapping_items() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create(&mut con, "shared", 40_000, 0.001).unwrap();
    let url = server.url();
    let handles: Vec<_> = (0..4u32)
        .map(|w| {
            let bf = bf.clone().with_engine(if w % 2 == 0 {
                Engine::Bitfield
            } else {
                Engine::Script
            });
            let url = url.clone();
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                // Writers overlap by half: writer w adds [w*5000, w*5000 + 10000).
                let mine = items("u", w * 5000..w * 5000 + 10_000);
                let mut new = 0;
                for chunk in mine.chunks(250) {
                    new += bf
                        .multi_add(&mut con, chunk)
                        .unwrap()
                        .iter()
                        .filter(|&&b| b)
                        .count();
                }
                new
            })
        })
        .collect();
    let new: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let all = items("u", 0..25_000);
    let found = bf.multi_exists(&mut con, &all).unwrap();
    assert!(found.iter().all(|&b| b), "every added item is found");
    // Each distinct item is reported new at most once across writers.
    assert!(new <= 25_000, "{new}");
    assert!(new >= 24_900, "{new}");
}

#[test]
fn bulk_load_is_resumable() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create(&mut con, "load", 10_000, 0.01).unwrap();
    let xs = items("l", 0..2_345);
    // An interrupted load: only the first 1,000 lines were available.
    let mut seen = Vec::new();
    let first = bf
        .load(&mut con, xs.iter().take(1000), 300, 0, |p| seen.push(p))
        .unwrap();
    assert_eq!(
        first,
        LoadProgress {
            done: 1000,
            added: 1000
        }
    );
    assert_eq!(
        seen.iter().map(|p| p.done).collect::<Vec<_>>(),
        vec![300, 600, 900, 1000]
    );
    // Resume from the reported position over the whole input.
    let rest = bf
        .load(&mut con, xs.iter(), 300, first.done, |_| {})
        .unwrap();
    assert_eq!(rest.done, 2_345);
    assert_eq!(rest.added, 1_345);
    assert!(bf.multi_exists(&mut con, &xs).unwrap().iter().all(|&b| b));
    assert!(matches!(
        bf.load(&mut con, xs.iter(), 0, 0, |_| {})
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument { .. })
    ));
}

#[test]
fn seed_filters_read_and_extend_php_bitmaps() {
    let server = support::server();
    let mut con = server.connection();
    // What the seed's loadDb2bloom wrote: SETBIT bloom_user_email JSHash(email) 1.
    let php_emails = ["hello@example.com", "a@b.cn", "张三@example.com"];
    for e in php_emails {
        let _: i64 = redis::cmd("SETBIT")
            .arg("bloom_user_email")
            .arg(js_hash(e.as_bytes(), true))
            .arg(1)
            .query(&mut con)
            .unwrap();
    }
    let seed = SeedBloom::new("bloom_user_email").unwrap();
    assert_eq!(seed.offset(b"hello@example.com").unwrap(), 701432834);
    assert!(
        seed.multi_exists(&mut con, &php_emails)
            .unwrap()
            .iter()
            .all(|&b| b)
    );
    assert!(!seed.exists(&mut con, "new@example.com").unwrap());
    // Rust adds; the PHP side (GETBIT at JSHash) sees it.
    assert!(seed.add(&mut con, "new@example.com").unwrap());
    assert!(!seed.add(&mut con, "new@example.com").unwrap());
    let bit: i64 = redis::cmd("GETBIT")
        .arg("bloom_user_email")
        .arg(js_hash(b"new@example.com", true))
        .query(&mut con)
        .unwrap();
    assert_eq!(bit, 1);
    // k = 1 and folding: "a" and "b" share an offset, so "b" is a false positive.
    let tel = SeedBloom::new("bloom_user_telephone").unwrap();
    tel.add(&mut con, "a").unwrap();
    assert!(tel.exists(&mut con, "b").unwrap());
    // Without folding they differ.
    let raw = SeedBloom::new("bloom_raw").unwrap().limit_memory(false);
    raw.add(&mut con, "a").unwrap();
    assert!(!raw.exists(&mut con, "b").unwrap());
    let done = tel
        .load(
            &mut con,
            ["13800138000", "13912345678"].iter(),
            1,
            0,
            |_| {},
        )
        .unwrap();
    assert_eq!(done, LoadProgress { done: 2, added: 2 });
    assert!(tel.exists(&mut con, "13800138000").unwrap());
    // More items than one BITFIELD of the scripts takes (they split them).
    let many = items("1390000", 0..3000);
    assert_eq!(tel.multi_add(&mut con, &many).unwrap().len(), 3000);
    assert!(
        tel.multi_exists(&mut con, &many)
            .unwrap()
            .iter()
            .all(|&b| b)
    );
    // The script checks offsets itself too (the typed wrapper first).
    assert!(scripts::bloom::seed_add("bloom_raw", &[4294967296]).is_err());
    assert!(matches!(
        support::raw_call::<Vec<i64>>(&scripts::BLOOM_SEED_ADD, &["bloom_raw"], &["4294967296"])
            .invoke(&mut con)
            .map_err(Error::into_kind),
        Err(ErrorKind::InvalidArgument {
            script: Some(_),
            ..
        })
    ));
}

#[test]
fn memory_stays_within_the_size_classes() {
    let server = support::server();
    let mut con = server.connection();
    let bf = Bloom::create(&mut con, "mem", 1_000_000, 0.01).unwrap();
    let mut total = 0u64;
    for key in bf.all_keys() {
        let usage: u64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query(&mut con)
            .unwrap();
        total += usage;
    }
    let ideal = bf.params().m as f64 / 8.0;
    assert!(
        total as f64 <= ideal * 1.02,
        "MEMORY USAGE {total} vs m/8 = {ideal}"
    );
}

// ---------------------------------------------------------------------------
// Redis Cluster and the async twins. Each scenario runs the same sequence of
// every public operation on two connections and compares what they saw.

use redis::ConnectionLike;
use redis_patterns::bloom::{BloomInfo, BloomParams};
use redis_patterns::fanout::Topology;
use redis_patterns_test_support::LocalCluster;

/// Everything one run of [`exercise`] observed.
#[derive(Debug, PartialEq)]
struct Trace {
    block_keys: Vec<String>,
    mismatch: String,
    first_adds: Vec<bool>,
    single: Vec<bool>,
    found: Vec<bool>,
    info: BloomInfo,
    approx: u64,
    opened: (BloomParams, Vec<String>, bool),
    blocks: Vec<Vec<u8>>,
    after_clear: (Vec<u64>, bool, bool),
    lost: Vec<String>,
    repaired: bool,
    left_after_destroy: i64,
}

fn scenario_opts(engine: Engine, spread: bool, topology: Topology) -> BloomOptions {
    BloomOptions {
        engine,
        spread_blocks: spread,
        topology,
        ..BloomOptions::default()
    }
}

/// The filter names of the scenarios; their spread block keys land on
/// different nodes of a three-node cluster (checked in the cluster tests).
const SCENARIOS: [(&str, Engine, bool); 4] = [
    ("bf-spread", Engine::Bitfield, true),
    ("sc-spread", Engine::Script, true),
    ("bf-tagged", Engine::Bitfield, false),
    ("sc-tagged", Engine::Script, false),
];

fn err_text<T: std::fmt::Debug>(r: redis_patterns::Result<T>) -> String {
    match r {
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::BloomMissing { .. } | ErrorKind::BloomConfigMismatch { .. }
            ) =>
        {
            e.to_string()
        }
        other => panic!("expected a bloom error, got {other:?}"),
    }
}

/// Every public operation of a sized filter, on a sync connection.
fn exercise(con: &mut dyn ConnectionLike, name: &str, o: &BloomOptions) -> Trace {
    let bf = Bloom::create_with(con, name, 1_000_000, 0.01, o).expect("create");
    assert!(bf.block_keys().len() >= 2, "{:?}", bf.block_keys());
    Bloom::create_with(con, name, 1_000_000, 0.01, o).expect("create again opens");
    let mismatch = err_text(Bloom::create_with(con, name, 2_000_000, 0.01, o));
    let mut xs = items("x", 0..4000);
    xs.extend(items("x", 0..50));
    let first_adds = bf.multi_add(con, &xs).expect("multi_add");
    let single = vec![
        bf.add(con, "alice").expect("add"),
        bf.add(con, "alice").expect("add"),
        bf.exists(con, "alice").expect("exists"),
        bf.exists(con, "bob").expect("exists"),
    ];
    let mut probe = items("x", 0..4000);
    probe.extend(items("y", 0..4000));
    let found = bf.multi_exists(con, &probe).expect("multi_exists");
    let info = bf.info(con).expect("info");
    let approx = bf.approx_count(con).expect("approx_count");
    let again = Bloom::open_with(con, name, o).expect("open");
    let opened = (
        again.params().clone(),
        again.block_keys().to_vec(),
        again.exists(con, "x1").expect("exists"),
    );
    let blocks = bf
        .block_keys()
        .iter()
        .map(|k| redis::cmd("GET").arg(k).query(con).expect("GET"))
        .collect();
    bf.clear(con).expect("clear");
    let after_clear = (
        bf.bits_set(con).expect("bits_set"),
        bf.exists(con, "x1").expect("exists"),
        bf.add(con, "x1").expect("add"),
    );
    let _: i64 = redis::cmd("DEL")
        .arg(&bf.block_keys()[1])
        .query(con)
        .expect("DEL");
    let lost = vec![
        err_text(bf.multi_exists(con, &probe)),
        err_text(bf.multi_add(con, &probe)),
        err_text(bf.multi_exists(con, &probe)),
        err_text(Bloom::open_with(con, name, o)),
    ];
    bf.clear(con).expect("clear repairs");
    let repaired = bf.add(con, "x2").expect("add after repair");
    bf.destroy(con).expect("destroy");
    let mut left_after_destroy = 0;
    for k in bf.all_keys() {
        left_after_destroy += redis::cmd("EXISTS")
            .arg(&k)
            .query::<i64>(con)
            .expect("EXISTS");
    }
    Trace {
        block_keys: bf.block_keys().to_vec(),
        mismatch,
        first_adds,
        single,
        found,
        info,
        approx,
        opened,
        blocks,
        after_clear,
        lost,
        repaired,
        left_after_destroy,
    }
}

/// [`exercise`] through the async twins.
async fn exercise_async<C: redis::aio::ConnectionLike + Send>(
    con: &mut C,
    name: &str,
    o: &BloomOptions,
) -> Trace {
    let bf = Bloom::create_with_async(con, name, 1_000_000, 0.01, o)
        .await
        .expect("create");
    Bloom::create_with_async(con, name, 1_000_000, 0.01, o)
        .await
        .expect("create again opens");
    let mismatch = err_text(Bloom::create_with_async(con, name, 2_000_000, 0.01, o).await);
    let mut xs = items("x", 0..4000);
    xs.extend(items("x", 0..50));
    let first_adds = bf.multi_add_async(con, &xs).await.expect("multi_add");
    let single = vec![
        bf.add_async(con, "alice").await.expect("add"),
        bf.add_async(con, "alice").await.expect("add"),
        bf.exists_async(con, "alice").await.expect("exists"),
        bf.exists_async(con, "bob").await.expect("exists"),
    ];
    let mut probe = items("x", 0..4000);
    probe.extend(items("y", 0..4000));
    let found = bf
        .multi_exists_async(con, &probe)
        .await
        .expect("multi_exists");
    let info = bf.info_async(con).await.expect("info");
    let approx = bf.approx_count_async(con).await.expect("approx_count");
    let again = Bloom::open_with_async(con, name, o).await.expect("open");
    let opened = (
        again.params().clone(),
        again.block_keys().to_vec(),
        again.exists_async(con, "x1").await.expect("exists"),
    );
    let mut blocks = Vec::new();
    for k in bf.block_keys() {
        blocks.push(
            redis::cmd("GET")
                .arg(k)
                .query_async(con)
                .await
                .expect("GET"),
        );
    }
    bf.clear_async(con).await.expect("clear");
    let after_clear = (
        bf.bits_set_async(con).await.expect("bits_set"),
        bf.exists_async(con, "x1").await.expect("exists"),
        bf.add_async(con, "x1").await.expect("add"),
    );
    let _: i64 = redis::cmd("DEL")
        .arg(&bf.block_keys()[1])
        .query_async(con)
        .await
        .expect("DEL");
    let lost = vec![
        err_text(bf.multi_exists_async(con, &probe).await),
        err_text(bf.multi_add_async(con, &probe).await),
        err_text(bf.multi_exists_async(con, &probe).await),
        err_text(Bloom::open_with_async(con, name, o).await),
    ];
    bf.clear_async(con).await.expect("clear repairs");
    let repaired = bf.add_async(con, "x2").await.expect("add after repair");
    bf.destroy_async(con).await.expect("destroy");
    let mut left_after_destroy = 0;
    for k in bf.all_keys() {
        left_after_destroy += redis::cmd("EXISTS")
            .arg(&k)
            .query_async::<i64>(con)
            .await
            .expect("EXISTS");
    }
    Trace {
        block_keys: bf.block_keys().to_vec(),
        mismatch,
        first_adds,
        single,
        found,
        info,
        approx,
        opened,
        blocks,
        after_clear,
        lost,
        repaired,
        left_after_destroy,
    }
}

/// Sanity of a trace on its own (the comparisons check the rest).
fn check_trace(t: &Trace) {
    assert!(t.mismatch.contains("stored"), "{}", t.mismatch);
    assert!(t.first_adds[..4000].iter().all(|&b| b));
    assert!(t.first_adds[4000..].iter().all(|&b| !b), "repeats");
    assert_eq!(t.single, vec![true, false, true, false]);
    assert!(t.found[..4000].iter().all(|&b| b), "no false negatives");
    assert!(t.found[4000..].iter().filter(|&&b| b).count() < 40);
    assert!((3900..=4100).contains(&t.approx), "{}", t.approx);
    assert_eq!(t.info.approx_count, t.approx);
    assert_eq!(t.opened.1, t.block_keys);
    assert!(t.opened.2);
    assert!(t.after_clear.0.iter().all(|&b| b == 0));
    assert!(!t.after_clear.1);
    assert!(t.after_clear.2);
    assert!(t.lost.iter().all(|e| e.contains("missing")), "{:?}", t.lost);
    assert!(t.repaired);
    assert_eq!(t.left_after_destroy, 0);
}

/// What a seed-compatible filter saw.
#[derive(Debug, PartialEq)]
struct SeedTrace {
    adds: Vec<bool>,
    single: Vec<bool>,
    found: Vec<bool>,
    bits: i64,
}

fn seed_items() -> Vec<String> {
    (0..300).map(|i| format!("user{i}@example.com")).collect()
}

fn seed_exercise(con: &mut dyn ConnectionLike, seed: &SeedBloom) -> SeedTrace {
    let xs = seed_items();
    let adds = seed.multi_add(con, &xs[..200]).expect("multi_add");
    let single = vec![
        seed.add(con, "new@example.com").expect("add"),
        seed.add(con, "new@example.com").expect("add"),
        seed.exists(con, "new@example.com").expect("exists"),
        seed.exists(con, "other@example.com").expect("exists"),
    ];
    let found = seed.multi_exists(con, &xs).expect("multi_exists");
    let bits = redis::cmd("BITCOUNT")
        .arg(seed.key())
        .query(con)
        .expect("BITCOUNT");
    SeedTrace {
        adds,
        single,
        found,
        bits,
    }
}

async fn seed_exercise_async<C: redis::aio::ConnectionLike + Send>(
    con: &mut C,
    seed: &SeedBloom,
) -> SeedTrace {
    let xs = seed_items();
    let adds = seed
        .multi_add_async(con, &xs[..200])
        .await
        .expect("multi_add");
    let single = vec![
        seed.add_async(con, "new@example.com").await.expect("add"),
        seed.add_async(con, "new@example.com").await.expect("add"),
        seed.exists_async(con, "new@example.com")
            .await
            .expect("exists"),
        seed.exists_async(con, "other@example.com")
            .await
            .expect("exists"),
    ];
    let found = seed
        .multi_exists_async(con, &xs)
        .await
        .expect("multi_exists");
    let bits = redis::cmd("BITCOUNT")
        .arg(seed.key())
        .query_async(con)
        .await
        .expect("BITCOUNT");
    SeedTrace {
        adds,
        single,
        found,
        bits,
    }
}

/// Grows a seed bitmap to its full size (offsets with `limitMemory` stay
/// below 2e9) on a sync connection: allocating ~250 MB can outlast the async
/// connections' default response timeout on a busy machine.
fn pregrow(con: &mut dyn ConnectionLike, key: &str) {
    let _: i64 = redis::cmd("SETBIT")
        .arg(key)
        .arg(1_999_999_999u64)
        .arg(0)
        .query(con)
        .expect("SETBIT");
}

fn check_seed_trace(t: &SeedTrace) {
    assert!(t.adds.iter().filter(|&&b| b).count() >= 190, "{:?}", t.adds);
    assert_eq!(&t.single[..3], &[true, false, true]);
    assert!(t.found[..200].iter().all(|&b| b));
    assert!(t.bits >= 190);
}

/// The node that owns `key` (only it answers without MOVED).
fn owner(cluster: &LocalCluster, key: &str) -> usize {
    cluster
        .nodes()
        .iter()
        .position(|n| {
            redis::cmd("EXISTS")
                .arg(key)
                .query::<i64>(&mut n.connection())
                .is_ok()
        })
        .expect("some node owns every slot")
}

fn flush_scripts(cluster: &LocalCluster) {
    for n in cluster.nodes() {
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query(&mut n.connection())
            .expect("SCRIPT FLUSH");
    }
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let cluster = support::cluster();
    let mut cc = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    let server = support::server();
    let mut sa = server.connection();
    for (name, engine, spread) in SCENARIOS {
        let on_cluster = exercise(
            &mut cc,
            name,
            &scenario_opts(engine, spread, Topology::Cluster),
        );
        check_trace(&on_cluster);
        let on_one = exercise(
            &mut sa,
            name,
            &scenario_opts(engine, spread, Topology::Standalone),
        );
        assert_eq!(on_cluster, on_one, "{name}");
        let owners: std::collections::BTreeSet<usize> = on_cluster
            .block_keys
            .iter()
            .map(|k| owner(&cluster, k))
            .collect();
        if spread {
            assert!(owners.len() >= 2, "{name}: {:?}", on_cluster.block_keys);
        } else {
            assert_eq!(owners.len(), 1, "{name}");
        }
    }

    // Seed-compatible filters: one key, one script call per operation.
    let seed = SeedBloom::new("bloom_user_email").unwrap();
    let on_cluster = seed_exercise(&mut cc, &seed);
    check_seed_trace(&on_cluster);
    assert_eq!(on_cluster, seed_exercise(&mut sa, &seed));

    // Bulk loads, resumed, give the same progress as on one server.
    let xs = items("l", 0..2_345);
    let mut progress = Vec::new();
    for (con, topology) in [
        (&mut cc as &mut dyn ConnectionLike, Topology::Cluster),
        (&mut sa, Topology::Standalone),
    ] {
        let o = scenario_opts(Engine::Bitfield, true, topology);
        let bf = Bloom::create_with(con, "loaded", 1_000_000, 0.01, &o).unwrap();
        let first = bf.load(con, xs.iter().take(1000), 300, 0, |_| {}).unwrap();
        let rest = bf.load(con, xs.iter(), 300, first.done, |_| {}).unwrap();
        assert!(bf.multi_exists(con, &xs).unwrap().iter().all(|&b| b));
        let seeded = seed.load(con, xs.iter(), 1000, 0, |_| {}).unwrap();
        progress.push((first, rest, seeded, bf.bits_set(con).unwrap()));
    }
    assert_eq!(progress[0], progress[1]);
    assert_eq!(
        progress[0].1,
        LoadProgress {
            done: 2_345,
            added: 1_345
        }
    );

    // After SCRIPT FLUSH on every node the script engine reloads per node.
    flush_scripts(&cluster);
    let o = scenario_opts(Engine::Script, true, Topology::Cluster);
    let bf = Bloom::create_with(&mut cc, "after-flush", 1_000_000, 0.01, &o).unwrap();
    flush_scripts(&cluster);
    assert!(bf.multi_add(&mut cc, &xs).unwrap().iter().all(|&b| b));
    flush_scripts(&cluster);
    assert!(bf.multi_exists(&mut cc, &xs).unwrap().iter().all(|&b| b));
}

#[test]
fn async_twins_match_sync_on_one_server() {
    let server = support::server();
    let mut con = server.connection();
    let rt = support::runtime();
    let (mut mux, mut mgr) = rt.block_on(support::async_connections(&server));
    for (name, engine, spread) in SCENARIOS {
        let o = scenario_opts(engine, spread, Topology::Standalone);
        let sync = exercise(&mut con, name, &o);
        check_trace(&sync);
        assert_eq!(support::dbsize(&mut con), 0);
        assert_eq!(
            rt.block_on(exercise_async(&mut mux, name, &o)),
            sync,
            "{name}"
        );
        assert_eq!(
            rt.block_on(exercise_async(&mut mgr, name, &o)),
            sync,
            "{name}"
        );
        assert_eq!(support::dbsize(&mut con), 0);
    }
    let sync = seed_exercise(&mut con, &SeedBloom::new("seed-sync").unwrap());
    check_seed_trace(&sync);
    let seed = SeedBloom::new("seed-mux").unwrap();
    pregrow(&mut con, seed.key());
    assert_eq!(rt.block_on(seed_exercise_async(&mut mux, &seed)), sync);
    let seed = SeedBloom::new("seed-mgr").unwrap();
    pregrow(&mut con, seed.key());
    assert_eq!(rt.block_on(seed_exercise_async(&mut mgr, &seed)), sync);
    // Bad input is refused before anything is written, async too.
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    rt.block_on(async {
        assert!(matches!(
            Bloom::create_async(&mut mux, "f", 1000, 1.5)
                .await
                .map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            Bloom::open_async(&mut mux, "a{b}")
                .await
                .map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            Bloom::open_async(&mut mgr, "nope")
                .await
                .map_err(Error::into_kind),
            Err(ErrorKind::BloomMissing { .. })
        ));
        assert!(matches!(
            SeedBloom::new("s")
                .unwrap()
                .add_async(&mut mux, "")
                .await
                .map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
    });
    assert_eq!(support::dbsize(&mut con), 0);
}

#[test]
fn async_twins_run_on_a_real_cluster() {
    let cluster = support::cluster();
    let server = support::server();
    let mut sa = server.connection();
    let rt = support::runtime();
    let mut ac = rt
        .block_on(cluster.client().get_async_connection())
        .expect("async cluster connection");
    for (name, engine, spread) in SCENARIOS {
        let on_cluster = rt.block_on(exercise_async(
            &mut ac,
            name,
            &scenario_opts(engine, spread, Topology::Cluster),
        ));
        check_trace(&on_cluster);
        let on_one = exercise(
            &mut sa,
            name,
            &scenario_opts(engine, spread, Topology::Standalone),
        );
        assert_eq!(on_cluster, on_one, "{name}");
    }
    let seed = SeedBloom::new("bloom_user_email").unwrap();
    let mut cc = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    pregrow(&mut cc, seed.key());
    let on_cluster = rt.block_on(seed_exercise_async(&mut ac, &seed));
    check_seed_trace(&on_cluster);
    assert_eq!(on_cluster, seed_exercise(&mut sa, &seed));

    rt.block_on(async {
        let xs = items("w", 0..3000);
        for engine in [Engine::Bitfield, Engine::Script] {
            let o = scenario_opts(engine, true, Topology::Cluster);
            let name = format!("wide-{engine:?}");
            let bf = Bloom::create_with_async(&mut ac, &name, 1_000_000, 0.01, &o)
                .await
                .unwrap();
            // Without Topology::Cluster the blocks' calls form one
            // cross-slot pipeline, which the async cluster connection refuses.
            let plain = bf.clone().with_topology(Topology::Standalone);
            assert!(plain.multi_exists_async(&mut ac, &xs).await.is_err());
            // After SCRIPT FLUSH on every node each slot's batch reloads.
            flush_scripts(&cluster);
            let added = bf.multi_add_async(&mut ac, &xs).await.unwrap();
            assert!(added.iter().all(|&b| b));
            flush_scripts(&cluster);
            let found = bf.multi_exists_async(&mut ac, &xs).await.unwrap();
            assert!(found.iter().all(|&b| b));
        }
    });
}
