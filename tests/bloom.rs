//! Bloom filters against a real redis-server (one per test).

mod support;

use redis_patterns::Error;
use redis_patterns::bloom::{Bloom, BloomOptions, Engine, LoadProgress, SeedBloom};
use redis_patterns::hash::js_hash;
use redis_patterns::scripts;

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
    match Bloom::create(&mut con, "emails", 2000, 0.01) {
        Err(Error::BloomConfigMismatch { detail }) => {
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
        Bloom::open(&mut con, "nope"),
        Err(Error::BloomMissing { .. })
    ));
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let server = support::server();
    let mut con = server.connection();
    for p in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                Bloom::create(&mut con, "f", 1000, p),
                Err(Error::InvalidInput { .. })
            ),
            "p = {p}"
        );
    }
    assert!(matches!(
        Bloom::create(&mut con, "f", 0, 0.01),
        Err(Error::InvalidInput { .. })
    ));
    let small = BloomOptions {
        max_bits: 1_000_000,
        ..BloomOptions::default()
    };
    match Bloom::create_with(&mut con, "f", 1_000_000, 0.01, &small) {
        Err(Error::InvalidInput { reason, .. }) => assert!(reason.contains("bound"), "{reason}"),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    assert!(matches!(
        Bloom::create(&mut con, "", 1000, 0.01),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        Bloom::create(&mut con, "a{b}", 1000, 0.01),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        Bloom::create(&mut con, "f", 1000, 1e-30),
        Err(Error::InvalidInput { .. })
    ));
    let seed = SeedBloom::new("bloom_user_email").unwrap();
    assert!(matches!(
        seed.add(&mut con, ""),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        seed.multi_add(&mut con, &["ok@example.com", ""]),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        seed.exists(&mut con, ""),
        Err(Error::InvalidInput { .. })
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
        match scripts::bloom::add(key, bits, 7, &offsets).invoke(&mut con) {
            Err(Error::ScriptArgument { detail, .. }) => {
                assert!(detail.contains("offset") || detail.contains("multiple"))
            }
            other => panic!("expected ScriptArgument, got {other:?}"),
        }
    }
    let after: Vec<u8> = redis::cmd("GET").arg(key).query(&mut con).unwrap();
    assert_eq!(before, after);
    // A block that does not exist is refused, not created.
    match scripts::bloom::add("bloom:{ghost}:0", bits, 7, &[1, 2, 3, 4, 5, 6, 7]).invoke(&mut con) {
        Err(Error::BloomMissing { .. }) => {}
        other => panic!("expected BloomMissing, got {other:?}"),
    }
    let ghost: i64 = redis::cmd("EXISTS")
        .arg("bloom:{ghost}:0")
        .query(&mut con)
        .unwrap();
    assert_eq!(ghost, 0);
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
            bf.exists(&mut con, "x"),
            Err(Error::BloomMissing { .. })
        ));
        assert!(matches!(
            bf.add(&mut con, "x"),
            Err(Error::BloomMissing { .. })
        ));
        // It stays an error; the script engine wrote nothing, the BITFIELD
        // engine's re-created block keeps its sentinel cleared.
        assert!(matches!(
            bf.add(&mut con, "x"),
            Err(Error::BloomMissing { .. })
        ));
        if engine == Engine::Script {
            assert_eq!(support::dbsize(&mut con), 0);
        }
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    }
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
    bf.clear(&mut con).unwrap();
    assert_eq!(bf.bits_set(&mut con).unwrap().iter().sum::<u64>(), 0);
    assert!(bf.multi_exists(&mut con, &xs).unwrap().iter().all(|&b| !b));
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
        bf.load(&mut con, xs.iter(), 0, 0, |_| {}),
        Err(Error::InvalidInput { .. })
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
    // The script checks offsets itself too.
    assert!(matches!(
        scripts::bloom::seed_add("bloom_raw", &[4294967296]).invoke(&mut con),
        Err(Error::ScriptArgument { .. })
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
