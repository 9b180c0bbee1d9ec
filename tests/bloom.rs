//! Bloom filters against a real redis-server (one per test), every test body
//! through both drivers (sync `Connection`, async `AsyncConnection`); the
//! cluster scenarios on a real three-node cluster.

#[path = "support/counting.rs"]
mod counting;
mod support;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use counting::counted;
use redis_patterns::bloom::BloomHash;
use redis_patterns::bloom::{
    Bloom, BloomBuilder, BloomInfo, BloomParams, Engine, JsHashBloom, LoadProgress,
};
use redis_patterns::core::Allocator;
use redis_patterns::{Batch, Error, ErrorKind, Op, scripts};
use redis_patterns_test_support::{LocalCluster, LocalServer};
use support::{Driver, owner};

fn items(prefix: &str, range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}")).collect()
}

/// Blocks of at most 512 KiB: a filter for a million items has several on
/// every server (a libc server plans one block where it can).
const MULTI_BLOCK_BYTES: u64 = 512 << 10;

/// A filter for `n` items at `p` with `engine`, in blocks of at most
/// [`MULTI_BLOCK_BYTES`].
fn sized(name: &str, n: u64, p: f64, engine: Engine) -> BloomBuilder {
    Bloom::builder(name)
        .expected(n)
        .fp_rate(p)
        .engine(engine)
        .max_block_bytes(MULTI_BLOCK_BYTES)
}

/// Creates the filter `builder` plans (panics on any error).
fn create(d: &mut Driver, builder: BloomBuilder) -> Bloom {
    d.run(builder.create())
        .unwrap_or_else(|e| panic!("{}: create: {e}", d.name()))
}

fn kind<T>(r: redis_patterns::Result<T>) -> Result<T, ErrorKind> {
    r.map_err(Error::into_kind)
}

/// Whether `r` is the error of a filter (or a block of one) that is gone.
fn missing<T>(r: redis_patterns::Result<T>) -> bool {
    matches!(kind(r), Err(ErrorKind::BloomMissing { .. }))
}

/// How many of `flags` are set.
fn trues(flags: &[bool]) -> usize {
    flags.iter().filter(|&&b| b).count()
}

/// The "newly added" answers of adds that were not sent again (nothing
/// cuts a reply here: each is known).
fn sure(flags: Vec<Option<bool>>) -> Vec<bool> {
    flags
        .into_iter()
        .map(|f| f.expect("known: nothing was resent"))
        .collect()
}

fn get(d: &mut Driver, key: &str) -> Vec<u8> {
    d.cmd(key, redis::cmd("GET").arg(key))
}

fn flushall(server: &LocalServer) {
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut server.connection())
        .unwrap();
}

fn dbsize(server: &LocalServer) -> i64 {
    support::dbsize(&mut server.connection())
}

/// Runs `body` through both drivers on a fresh server, once for each of
/// `cases`, the server's data flushed after each case.
fn each_case<C: Copy>(cases: [C; 2], body: impl Fn(&mut Driver, &LocalServer, C)) {
    let server = support::server();
    support::each_driver(&server, |d| {
        for case in cases {
            body(d, &server, case);
            flushall(&server);
        }
    });
}

/// Items per op where a test checks many: an op of 8,000 items (56,000
/// bits) can take longer than the async connection's 500 ms response timeout
/// in a debug build on a busy two-core machine. Every batch is still one op
/// over several blocks, chunks and nodes.
const CHECK_BATCH: usize = 2000;

/// `op` over `items` in ops of [`CHECK_BATCH`] items, the flags in order;
/// the first error ends it.
fn in_batches<T: Send + 'static>(
    d: &mut Driver,
    items: &[String],
    op: impl Fn(&[String]) -> Op<Vec<T>>,
) -> redis_patterns::Result<Vec<T>> {
    let mut flags = Vec::with_capacity(items.len());
    for chunk in items.chunks(CHECK_BATCH) {
        flags.extend(d.run(op(chunk))?);
    }
    Ok(flags)
}

#[test]
fn add_then_exists_with_both_engines() {
    support::on_server(|d| {
        for (name, engine) in [("bf", Engine::Bitfield), ("sc", Engine::Script)] {
            let bf = create(d, sized(name, 10_000, 0.01, engine));
            assert_eq!(bf.engine(), engine);
            assert_eq!(
                d.run(bf.add("alice")).unwrap(),
                Some(true),
                "first add is new"
            );
            assert_eq!(
                d.run(bf.add("alice")).unwrap(),
                Some(false),
                "second add is maybe-present"
            );
            assert!(d.run(bf.exists("alice")).unwrap());
            assert!(!d.run(bf.exists("bob")).unwrap());
            // Per-item flags, including a repeat inside the batch.
            let flags = d
                .run(bf.multi_add(&["bob", "carol", "bob", "alice"]))
                .unwrap();
            assert_eq!(sure(flags), vec![true, true, false, false]);
            let found = d
                .run(bf.multi_exists(&["alice", "bob", "carol", "dave"]))
                .unwrap();
            assert_eq!(found, vec![true, true, true, false]);
            assert!(d.run(bf.multi_add::<&str>(&[])).unwrap().is_empty());
            // Empty items are ordinary items in sized filters.
            assert_eq!(d.run(bf.add("")).unwrap(), Some(true));
            assert!(d.run(bf.exists("")).unwrap());
        }
    });
}

#[test]
fn engines_write_identical_bits() {
    support::on_server(|d| {
        let a = create(d, sized("a", 5_000, 0.02, Engine::Bitfield));
        let b = create(d, sized("b", 5_000, 0.02, Engine::Script));
        let xs = items("item:", 0..3000);
        let fa = d.run(a.multi_add(&xs)).unwrap();
        let fb = d.run(b.multi_add(&xs)).unwrap();
        assert_eq!(fa, fb);
        for (ka, kb) in a.block_keys().iter().zip(b.block_keys()) {
            assert_eq!(get(d, ka), get(d, kb));
        }
        // The bits are exactly where `locate` says.
        for x in xs.iter().take(50) {
            let (block, offsets) = a.locate(x.as_bytes());
            let key = &a.block_keys()[block];
            for o in offsets {
                let bit: i64 = d.cmd(key, redis::cmd("GETBIT").arg(key).arg(o));
                assert_eq!(bit, 1);
            }
        }
    });
}

#[test]
fn batched_adds_set_exactly_the_bits_locate_names_in_every_block() {
    each_case([Engine::Bitfield, Engine::Script], |d, _, engine| {
        let a = create(d, sized("a", 1_000_000, 0.01, engine));
        let b = create(d, sized("b", 1_000_000, 0.01, engine));
        assert!(a.block_keys().len() >= 2);
        let xs = items("bit:", 0..3000);
        d.run(a.multi_add(&xs)).unwrap();
        // The same items, one SETBIT per bit from `locate`.
        let mut raw = Batch::new();
        for x in &xs {
            let (block, offsets) = b.locate(x.as_bytes());
            let key = &b.block_keys()[block];
            for o in offsets {
                raw.add(key, redis::cmd("SETBIT").arg(key).arg(o).arg(1).clone());
            }
        }
        d.run(raw).unwrap().all::<i64>().unwrap();
        let set = d.run(a.bits_set()).unwrap();
        assert!(set.iter().all(|&n| n > 0), "every block got items: {set:?}");
        for (ka, kb) in a.block_keys().iter().zip(b.block_keys()) {
            assert!(
                get(d, ka) == get(d, kb),
                "{engine:?}: {ka} differs from {kb}"
            );
        }
    });
}

#[test]
fn no_false_negatives_and_a_plausible_false_positive_rate() {
    support::on_server(|d| {
        let bf = d.run(Bloom::create("users", 20_000, 0.01)).unwrap();
        let members = items("member:", 0..20_000);
        for chunk in members.chunks(1000) {
            d.run(bf.multi_add(chunk)).unwrap();
        }
        for chunk in members.chunks(1000) {
            assert!(d.run(bf.multi_exists(chunk)).unwrap().iter().all(|&b| b));
        }
        let others = items("other:", 0..20_000);
        let mut fp = 0;
        for chunk in others.chunks(1000) {
            fp += trues(&d.run(bf.multi_exists(chunk)).unwrap());
        }
        // Expected ~200 (1 %); the hashes are deterministic, so this is not flaky.
        assert!((100..=300).contains(&fp), "false positives: {fp}");
        let count = d.run(bf.approx_count()).unwrap();
        assert!((19_000..=21_000).contains(&count), "approx count {count}");
        let info = d.run(bf.info()).unwrap();
        assert_eq!(info.approx_count, count);
        assert!(info.current_fp_rate > 0.005 && info.current_fp_rate < 0.02);
    });
}

#[test]
fn config_is_written_once_and_checked() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let bf = d.run(Bloom::create("emails", 1000, 0.01)).unwrap();
        d.run(bf.add("x")).unwrap();
        let before = support::all_keys(&mut server.connection());
        assert_eq!(
            before,
            bf.all_keys()
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
        );
        assert_eq!(bf.key(), "bloom:{emails}");
        assert_eq!(bf.config_key(), bf.key());
        let stored: HashMap<String, String> =
            d.cmd(bf.config_key(), redis::cmd("HGETALL").arg(bf.config_key()));
        assert_eq!(stored["m"], bf.params().m.to_string());
        assert_eq!(stored["k"], "7");
        assert_eq!(stored["scheme"], "murmur3-dh");
        // Same parameters: opens it, keeps the data.
        let again = d.run(Bloom::create("emails", 1000, 0.01)).unwrap();
        assert!(d.run(again.exists("x")).unwrap());
        // Other parameters: typed error, nothing changed.
        match kind(d.run(Bloom::create("emails", 2000, 0.01))) {
            Err(ErrorKind::BloomConfigMismatch { detail }) => {
                assert!(detail.contains("stored"), "{detail}")
            }
            other => panic!("expected BloomConfigMismatch, got {other:?}"),
        }
        let after: HashMap<String, String> =
            d.cmd(bf.config_key(), redis::cmd("HGETALL").arg(bf.config_key()));
        assert_eq!(stored, after);
        // Open without parameters reads them.
        let opened = d.run(Bloom::open("emails")).unwrap();
        assert_eq!(opened.params(), bf.params());
        assert!(d.run(opened.exists("x")).unwrap());
        assert!(missing(d.run(Bloom::open("nope"))));
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let server = support::server();
    support::each_driver(&server, |d| {
        for p in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(
                    kind(d.run(Bloom::create("f", 1000, p))),
                    Err(ErrorKind::InvalidArgument { .. })
                ),
                "p = {p}"
            );
        }
        assert!(matches!(
            kind(d.run(Bloom::create("f", 0, 0.01))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        let small = Bloom::builder("f")
            .expected(1_000_000)
            .fp_rate(0.01)
            .max_bits(1_000_000);
        match kind(d.run(small.create())) {
            Err(ErrorKind::InvalidArgument { reason, .. }) => {
                assert!(reason.contains("bound"), "{reason}")
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
        // Creating needs both sizes.
        for half in [
            Bloom::builder("f").expected(1000),
            Bloom::builder("f").fp_rate(0.01),
        ] {
            assert!(matches!(
                kind(d.run(half.create())),
                Err(ErrorKind::InvalidArgument { .. })
            ));
        }
        assert!(matches!(
            kind(d.run(Bloom::create("", 1000, 0.01))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            kind(d.run(Bloom::create("a{b}", 1000, 0.01))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            kind(d.run(Bloom::create("f", 1000, 1e-30))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        let php = JsHashBloom::new("bloom_user_email").unwrap();
        assert!(matches!(
            kind(d.run(php.add(""))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            kind(d.run(php.multi_add(&["ok@example.com", ""]))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            kind(d.run(php.exists(""))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(JsHashBloom::new("").is_err());
        assert_eq!(dbsize(&server), 0);
    });
}

#[test]
fn scripts_refuse_bad_offsets_and_write_nothing() {
    support::on_server(|d| {
        let bf = create(d, sized("f", 1000, 0.01, Engine::Script));
        let key = &bf.block_keys()[0];
        let bits = bf.params().block_bits[0] as i64;
        let before = get(d, key);
        for offsets in [
            vec![1, 2, 3, 4, 5, 6, bits],
            vec![1, 2, 3],
            vec![-1, 1, 2, 3, 4, 5, 6],
        ] {
            // Sent raw (the typed wrapper refuses an offset outside the
            // block before sending; the count is the script's own check).
            let wrapper = scripts::bloom::add(key, bits, 7, &offsets);
            assert_eq!(wrapper.is_err(), offsets.len() == 7, "{offsets:?}");
            let args: Vec<String> = [bits, 7]
                .iter()
                .chain(&offsets)
                .map(|v| v.to_string())
                .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let raw = support::raw_call::<Vec<i64>>(&scripts::BLOOM_ADD, &[key], &args);
            match kind(d.run(raw)) {
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
        assert_eq!(before, get(d, key));
        // A block that does not exist is refused, not created.
        match kind(d.run(scripts::bloom::add(
            "bloom:{ghost}:0",
            bits,
            7,
            &[1, 2, 3, 4, 5, 6, 7],
        ))) {
            Err(ErrorKind::BloomMissing { .. }) => {}
            other => panic!("expected BloomMissing, got {other:?}"),
        }
        let ghost: i64 = d.cmd(
            "bloom:{ghost}:0",
            redis::cmd("EXISTS").arg("bloom:{ghost}:0"),
        );
        assert_eq!(ghost, 0);
    });
}

#[test]
fn create_script_refuses_bad_arguments_before_writing() {
    let server = support::server();
    support::each_driver(&server, |d| {
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
            match kind(d.run(call)) {
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
            assert_eq!(dbsize(&server), 0, "{blocks:?} {bits:?}: nothing written");
        }
        // The same call with good arguments creates config and blocks.
        let created = d
            .run(scripts::bloom::create(
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
            ))
            .unwrap();
        assert_eq!(created, 1);
        assert_eq!(dbsize(&server), 3);
    });
}

#[test]
fn a_lost_block_is_an_error_with_both_engines() {
    each_case([Engine::Script, Engine::Bitfield], |d, server, engine| {
        let bf = create(d, sized("f", 1000, 0.01, engine));
        d.run(bf.add("x")).unwrap();
        d.run(bf.destroy()).unwrap();
        assert_eq!(dbsize(server), 0);
        assert!(missing(d.run(bf.exists("x"))));
        assert!(missing(d.run(bf.add("x"))));
        // It stays an error; the script engine wrote nothing, the
        // BITFIELD engine's re-created block keeps its sentinel cleared.
        assert!(missing(d.run(bf.add("x"))));
        if engine == Engine::Script {
            assert_eq!(dbsize(server), 0);
        }
    });
}

#[test]
fn every_block_an_add_re_created_stays_lost() {
    each_case([false, true], |d, _, spread| {
        let bf = create(
            d,
            sized("f", 1_000_000, 0.01, Engine::Bitfield).spread_blocks(spread),
        );
        assert_eq!(bf.spread_blocks(), spread);
        assert!(bf.block_keys().len() >= 2, "{:?}", bf.params().block_bits);
        // One item in each of the first two blocks.
        let pick = |block: usize| {
            (0..10_000)
                .map(|i| format!("it{i}"))
                .find(|x| bf.locate(x.as_bytes()).0 == block)
                .unwrap()
        };
        let (a, b) = (pick(0), pick(1));
        d.run(bf.multi_add(&[&a, &b])).unwrap();
        for key in &bf.block_keys()[..2] {
            let _: i64 = d.cmd(key, redis::cmd("DEL").arg(key));
        }
        // One add touches both lost blocks (and re-creates both).
        assert!(missing(d.run(bf.multi_add(&[&a, &b]))));
        // Both stay lost: neither answers "absent" or "present".
        for item in [&a, &b] {
            match kind(d.run(bf.exists(item))) {
                Err(ErrorKind::BloomMissing { .. }) => {}
                other => {
                    panic!("spread {spread} item {item}: expected BloomMissing, got {other:?}")
                }
            }
        }
        d.run(bf.clear()).unwrap();
        assert!(!d.run(bf.exists(&a)).unwrap());
        assert!(!d.run(bf.exists(&b)).unwrap());
    });
}

#[test]
fn counts_of_a_lost_block_are_an_error_not_empty() {
    support::on_server(|d| {
        let bf = create(d, sized("f", 1_000_000, 0.01, Engine::Bitfield));
        assert!(bf.block_keys().len() >= 2);
        d.run(bf.multi_add(&items("c", 0..2000))).unwrap();
        assert!(d.run(bf.bits_set()).unwrap().iter().all(|&b| b > 0));
        let last = bf.block_keys().len() - 1;
        let key = &bf.block_keys()[last];
        for lose in ["DEL", "SENTINEL"] {
            if lose == "DEL" {
                let _: i64 = d.cmd(key, redis::cmd("DEL").arg(key));
            } else {
                // A block re-created by a stray write: length right, sentinel 0.
                let _: i64 = d.cmd(
                    key,
                    redis::cmd("SETBIT")
                        .arg(key)
                        .arg(bf.params().block_bits[last])
                        .arg(0),
                );
            }
            match kind(d.run(bf.bits_set())) {
                Err(ErrorKind::BloomMissing { detail }) => {
                    assert!(detail.contains(key.as_str()), "{detail}")
                }
                other => panic!("{lose}: expected BloomMissing, got {other:?}"),
            }
            assert!(missing(d.run(bf.approx_count())));
            assert!(missing(d.run(bf.info())));
        }
        // clear makes it usable again, and counts work.
        d.run(bf.clear()).unwrap();
        assert_eq!(d.run(bf.bits_set()).unwrap().iter().sum::<u64>(), 0);
        assert_eq!(d.run(bf.approx_count()).unwrap(), 0);
    });
}

#[test]
fn clear_resets_bits_and_keeps_the_config() {
    support::on_server(|d| {
        let bf = d.run(Bloom::create("f", 10_000, 0.01)).unwrap();
        let xs = items("x", 0..500);
        d.run(bf.multi_add(&xs)).unwrap();
        assert!(d.run(bf.approx_count()).unwrap() > 400);
        let strlen = |d: &mut Driver| -> Vec<i64> {
            bf.block_keys()
                .iter()
                .map(|k| d.cmd(k, redis::cmd("STRLEN").arg(k)))
                .collect()
        };
        let sizes = strlen(d);
        // An expiry on the first block survives clear, to the millisecond;
        // the other blocks stay without one.
        let at: i64 = 4_102_444_800_123; // 2100-01-01, an explicit instant
        let first = &bf.block_keys()[0];
        let _: i64 = d.cmd(first, redis::cmd("PEXPIREAT").arg(first).arg(at));
        d.run(bf.clear()).unwrap();
        assert_eq!(d.run(bf.bits_set()).unwrap().iter().sum::<u64>(), 0);
        assert!(d.run(bf.multi_exists(&xs)).unwrap().iter().all(|&b| !b));
        for (j, key) in bf.block_keys().iter().enumerate() {
            let expiry: i64 = d.cmd(key, redis::cmd("PEXPIRETIME").arg(key));
            assert_eq!(expiry, if j == 0 { at } else { -1 }, "{key}");
            // Zeros, then the sentinel: the last bit of the last byte.
            let bytes = get(d, key);
            let (last, zeros) = bytes.split_last().unwrap();
            assert_eq!(*last, 1, "{key}");
            assert!(zeros.iter().all(|&b| b == 0), "{key}");
        }
        assert_eq!(sizes, strlen(d));
        assert_eq!(d.run(Bloom::open("f")).unwrap().params(), bf.params());
        assert_eq!(d.run(bf.add("again")).unwrap(), Some(true));
    });
}

#[test]
fn blocks_can_spread_over_slots() {
    support::on_server(|d| {
        let bf = create(
            d,
            sized("wide", 1_000_000, 0.01, Engine::Bitfield).spread_blocks(true),
        );
        assert!(bf.block_keys().len() >= 2);
        let slots: BTreeSet<u16> = bf
            .block_keys()
            .iter()
            .map(|k| redis_patterns::keys::cluster_slot(k.as_bytes()))
            .collect();
        assert_eq!(slots.len(), bf.block_keys().len(), "{:?}", bf.block_keys());
        let xs = items("s", 0..5000);
        in_batches(d, &xs, |c| bf.multi_add(c)).unwrap();
        assert!(
            in_batches(d, &xs, |c| bf.multi_exists(c))
                .unwrap()
                .iter()
                .all(|&b| b)
        );
        // Every block got items.
        assert!(d.run(bf.bits_set()).unwrap().iter().all(|&b| b > 0));
        let opened = d.run(Bloom::open("wide")).unwrap();
        assert_eq!(opened.block_keys(), bf.block_keys());
        assert!(opened.spread_blocks());
        d.run(bf.clear()).unwrap();
        assert!(!d.run(bf.exists("s1")).unwrap());
    });
}

#[test]
fn spread_create_writes_the_config_last_and_refuses_leftovers() {
    support::on_server(|d| {
        let spread =
            |name: &str| sized(name, 1_000_000, 0.01, Engine::Bitfield).spread_blocks(true);
        // What a create that crashed between blocks and config leaves: the
        // first block, pristine, and no config. The retry adopts it.
        let probe = d.run(spread("probe").create()).unwrap();
        let (keys, bits) = (
            probe.block_keys().to_vec(),
            probe.params().block_bits.clone(),
        );
        assert!(keys.len() >= 2);
        d.run(probe.destroy()).unwrap();
        let re_keys =
            |name: &str| -> Vec<String> { keys.iter().map(|k| k.replace("probe", name)).collect() };
        let crashed = re_keys("crashed");
        let made = d
            .run(scripts::bloom::init_block(
                &crashed[0],
                bits[0] as i64,
                true,
            ))
            .unwrap();
        assert_eq!(made, 1);
        let bf = d.run(spread("crashed").create()).unwrap();
        assert_eq!(bf.block_keys(), &crashed[..]);
        assert_eq!(d.run(bf.add("x")).unwrap(), Some(true));
        assert!(d.run(bf.exists("x")).unwrap());
        assert_eq!(d.run(Bloom::open("crashed")).unwrap().params(), bf.params());

        // A leftover block that holds data is refused, and no config is
        // written (so nothing claims the leftover's bits); the leftover is
        // untouched.
        let stale = re_keys("stale");
        let _: i64 = d.cmd(
            &stale[1],
            redis::cmd("SETBIT").arg(&stale[1]).arg(bits[1]).arg(1),
        );
        let _: i64 = d.cmd(&stale[1], redis::cmd("SETBIT").arg(&stale[1]).arg(5).arg(1));
        let before = get(d, &stale[1]);
        match kind(d.run(spread("stale").create())) {
            Err(ErrorKind::BloomConfigMismatch { detail }) => {
                assert!(detail.contains(&stale[1]), "{detail}")
            }
            other => panic!("expected BloomConfigMismatch, got {other:?}"),
        }
        let config: i64 = d.cmd("bloom:{stale}", redis::cmd("EXISTS").arg("bloom:{stale}"));
        assert_eq!(config, 0, "no config next to a refused leftover");
        assert_eq!(before, get(d, &stale[1]));
        assert!(missing(d.run(Bloom::open("stale"))));
        // Once the leftover is gone the retry succeeds (adopting the
        // pristine blocks the refused attempt created).
        let _: i64 = d.cmd(&stale[1], redis::cmd("DEL").arg(&stale[1]));
        let bf = d.run(spread("stale").create()).unwrap();
        assert_eq!(d.run(bf.bits_set()).unwrap().iter().sum::<u64>(), 0);

        // Creating an existing filter again opens it (its blocks hold data now).
        d.run(bf.multi_add(&items("s", 0..500))).unwrap();
        let again = d.run(spread("stale").create()).unwrap();
        assert!(
            d.run(again.multi_exists(&items("s", 0..500)))
                .unwrap()
                .iter()
                .all(|&b| b)
        );
        // And a spread filter whose config exists but a block is gone is refused.
        let _: i64 = d.cmd(&stale[0], redis::cmd("DEL").arg(&stale[0]));
        assert!(missing(d.run(spread("stale").create())));
    });
}

/// A spread filter's block `j` has the key of the config of a filter named
/// `<name>:<j>` (`bloom:{c:0}`): whichever is made second is refused with
/// an error naming the other filter, and the first is left as it was.
#[test]
fn filters_whose_keys_collide_are_refused_naming_the_other() {
    support::on_server(|d| {
        let spread =
            |name: &str| sized(name, 1_000_000, 0.01, Engine::Bitfield).spread_blocks(true);
        let small = |name: &str| sized(name, 1000, 0.01, Engine::Bitfield);
        let refused = |r: redis_patterns::Result<Bloom>, key: &str, other: &str| match kind(r) {
            Err(ErrorKind::BloomConfigMismatch { detail }) => assert!(
                detail.contains(key) && detail.contains(other) && detail.contains("collide"),
                "{detail}"
            ),
            other => panic!("expected a refusal naming {key}, got {other:?}"),
        };
        let wide = create(d, spread("c"));
        assert_eq!(wide.block_keys()[0], "bloom:{c:0}");
        d.run(wide.add("x")).unwrap();
        refused(
            d.run(small("c:0").create()),
            "bloom:{c:0}",
            "spread filter c",
        );
        refused(d.run(Bloom::open("c:0")), "bloom:{c:0}", "spread filter c");
        assert!(
            d.run(wide.exists("x")).unwrap(),
            "the spread filter is intact"
        );

        let first = create(d, small("e:0"));
        d.run(first.add("y")).unwrap();
        refused(d.run(spread("e").create()), "bloom:{e:0}", "filter e:0");
        assert!(
            d.run(first.exists("y")).unwrap(),
            "the first filter is intact"
        );
        let mut left: Vec<String> = d.cmd("bloom:{e}", redis::cmd("KEYS").arg("bloom:{e*"));
        let mut first_keys: Vec<String> = first.block_keys().to_vec();
        first_keys.push(first.config_key().to_string());
        left.sort();
        first_keys.sort();
        assert_eq!(left, first_keys, "nothing of the refused filter is left");
    });
}

#[test]
fn four_writers_with_overlapping_items() {
    support::on_server_at(|d, url| {
        let bf = d.run(Bloom::create("shared", 40_000, 0.001)).unwrap();
        let handles: Vec<_> = (0..4u32)
            .map(|w| {
                let bf = bf.clone().with_engine(if w % 2 == 0 {
                    Engine::Bitfield
                } else {
                    Engine::Script
                });
                let mut d = d.another(url);
                std::thread::spawn(move || {
                    // Writers overlap by half: writer w adds [w*5000, w*5000 + 10000).
                    let mine = items("u", w * 5000..w * 5000 + 10_000);
                    let mut new = 0;
                    for chunk in mine.chunks(250) {
                        new += trues(&sure(d.run(bf.multi_add(chunk)).unwrap()));
                    }
                    new
                })
            })
            .collect();
        let new: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        let all = items("u", 0..25_000);
        let found = in_batches(d, &all, |c| bf.multi_exists(c)).unwrap();
        assert_eq!(found.len(), all.len());
        assert!(found.iter().all(|&b| b), "every added item is found");
        // Each distinct item is reported new at most once across writers.
        assert!(new <= 25_000, "{new}");
        assert!(new >= 24_900, "{new}");
    });
}

#[test]
fn bulk_load_is_resumable() {
    support::on_server(|d| {
        let bf = d.run(Bloom::create("load", 10_000, 0.01)).unwrap();
        let xs = items("l", 0..2_345);
        // An interrupted load: only the first 1,000 lines were available.
        let mut seen = Vec::new();
        let mut load = bf.load(xs.iter().take(1000)).batch(300);
        for op in load.by_ref() {
            seen.push(d.run(op).unwrap());
        }
        let first = load.progress();
        assert_eq!(
            first,
            LoadProgress {
                done: 1000,
                added: 1000,
                unknown: 0
            }
        );
        assert_eq!(
            seen.iter().map(|p| p.done).collect::<Vec<_>>(),
            vec![300, 600, 900, 1000]
        );
        // Resume from the reported position over the whole input, as one op.
        let reported = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&reported);
        let rest = d
            .run(
                bf.load(xs.clone())
                    .batch(300)
                    .start(first.done)
                    .into_op(move |p| sink.lock().unwrap().push(p.done)),
            )
            .unwrap();
        assert_eq!(rest.done, 2_345);
        assert_eq!(rest.added, 1_345);
        assert_eq!(
            *reported.lock().unwrap(),
            vec![1300, 1600, 1900, 2200, 2345]
        );
        assert!(d.run(bf.multi_exists(&xs)).unwrap().iter().all(|&b| b));
        assert!(matches!(
            kind(d.run(bf.load(xs.clone()).batch(0).into_op(|_| {}))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        // Positions with nothing to load count in `done`.
        let gaps = d
            .run(
                bf.load(vec![Some("gap-a"), None, None, Some("gap-b"), None])
                    .batch(1)
                    .into_op(|_| {}),
            )
            .unwrap();
        assert_eq!(
            gaps,
            LoadProgress {
                done: 5,
                added: 2,
                unknown: 0
            }
        );
        // A batch that fails ends the load; its progress is where to resume.
        let php = JsHashBloom::new("bloom_load").unwrap();
        let mut load = php.load(["a@x", "b@x", "", "c@x"]).batch(2);
        assert_eq!(d.run(load.next().unwrap()).unwrap().done, 2);
        assert!(matches!(
            kind(d.run(load.next().unwrap())),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(load.next().is_none());
        assert_eq!(
            load.progress(),
            LoadProgress {
                done: 2,
                added: 2,
                unknown: 0
            }
        );
    });
}

/// Grows a JSHash bitmap to its full size (offsets with `limitMemory` stay
/// below 2e9) on a plain connection: allocating ~250 MB can outlast the async
/// connections' default response timeout on a busy machine.
fn pregrow(con: &mut redis::Connection, key: &str, offset: u64) {
    let _: i64 = redis::cmd("SETBIT")
        .arg(key)
        .arg(offset)
        .arg(0)
        .query(con)
        .expect("SETBIT");
}

const FOLDED_MAX: u64 = 1_999_999_999;

#[test]
fn jshash_filters_read_and_extend_php_bitmaps() {
    support::on_server_with_connection(|d, con| {
        // What PHP's loadDb2bloom wrote: SETBIT bloom_user_email JSHash(email) 1.
        let php_emails = ["hello@example.com", "a@b.cn", "张三@example.com"];
        for e in php_emails {
            let _: i64 = redis::cmd("SETBIT")
                .arg("bloom_user_email")
                .arg(BloomHash::js_hash(e.as_bytes(), true))
                .arg(1)
                .query(con)
                .unwrap();
        }
        let raw_max =
            u64::from(BloomHash::js_hash(b"a", false).max(BloomHash::js_hash(b"b", false)));
        pregrow(con, "bloom_user_telephone", FOLDED_MAX);
        pregrow(con, "bloom_raw", raw_max);
        let php = JsHashBloom::new("bloom_user_email").unwrap();
        assert!(php.limit_memory());
        assert_eq!(php.offset(b"hello@example.com").unwrap(), 701432834);
        assert!(
            d.run(php.multi_exists(&php_emails))
                .unwrap()
                .iter()
                .all(|&b| b)
        );
        assert!(!d.run(php.exists("new@example.com")).unwrap());
        // Rust adds; the PHP side (GETBIT at JSHash) sees it.
        assert_eq!(d.run(php.add("new@example.com")).unwrap(), Some(true));
        assert_eq!(d.run(php.add("new@example.com")).unwrap(), Some(false));
        let bit: i64 = redis::cmd("GETBIT")
            .arg("bloom_user_email")
            .arg(BloomHash::js_hash(b"new@example.com", true))
            .query(con)
            .unwrap();
        assert_eq!(bit, 1);
        // k = 1 and folding: "a" and "b" share an offset, so "b" is a false positive.
        let tel = JsHashBloom::new("bloom_user_telephone").unwrap();
        d.run(tel.add("a")).unwrap();
        assert!(d.run(tel.exists("b")).unwrap());
        // Without folding they differ.
        let raw = JsHashBloom::builder("bloom_raw")
            .limit_memory(false)
            .build()
            .unwrap();
        assert!(!raw.limit_memory());
        d.run(raw.add("a")).unwrap();
        assert!(!d.run(raw.exists("b")).unwrap());
        let done = d
            .run(
                tel.load(["13800138000", "13912345678"])
                    .batch(1)
                    .into_op(|_| {}),
            )
            .unwrap();
        assert_eq!(
            done,
            LoadProgress {
                done: 2,
                added: 2,
                unknown: 0
            }
        );
        assert!(d.run(tel.exists("13800138000")).unwrap());
        // More items than one BITFIELD of the scripts takes (they split them).
        let many = items("1390000", 0..3000);
        assert_eq!(d.run(tel.multi_add(&many)).unwrap().len(), 3000);
        assert!(d.run(tel.multi_exists(&many)).unwrap().iter().all(|&b| b));
        // The script checks offsets itself too (the typed wrapper first).
        assert!(scripts::bloom::jshash_add("bloom_raw", &[4294967296]).is_err());
        assert!(matches!(
            kind(d.run(support::raw_call::<Vec<i64>>(
                &scripts::BLOOM_JSHASH_ADD,
                &["bloom_raw"],
                &["4294967296"]
            ))),
            Err(ErrorKind::InvalidArgument {
                script: Some(_),
                ..
            })
        ));
        // A prefix goes in front of the bare key.
        let prefixed = JsHashBloom::builder("bloom_user_email")
            .prefix(redis_patterns::keys::Prefix::new("app:").unwrap())
            .build()
            .unwrap();
        assert_eq!(prefixed.key(), "app:bloom_user_email");
    });
}

/// `MEMORY USAGE` of every key of `bf`, summed.
fn memory_usage(d: &mut Driver, bf: &Bloom) -> u64 {
    bf.all_keys()
        .iter()
        .map(|key| d.cmd::<u64>(key, redis::cmd("MEMORY").arg("USAGE").arg(key)))
        .sum()
}

#[test]
fn blocks_are_planned_for_the_servers_allocator_and_fill_it() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let allocator = d
            .run(redis_patterns::core::ServerMemory::read("any"))
            .unwrap()
            .allocator;
        let bf = d.run(Bloom::create("mem", 1_000_000, 0.01)).unwrap();
        let planned = BloomParams::for_allocator(
            1_000_000,
            0.01,
            redis_patterns::bloom::BloomParams::DEFAULT_MAX_BITS,
            redis_patterns::bloom::BloomParams::MAX_BLOCK_BYTES,
            &allocator,
        )
        .unwrap();
        assert_eq!(bf.params(), &planned, "{}", allocator.name());
        let total = memory_usage(d, &bf);
        let ideal = bf.params().m as f64 / 8.0;
        assert!(
            total as f64 <= ideal * 1.005,
            "{}: MEMORY USAGE {total} vs m/8 = {ideal}",
            allocator.name()
        );
        // What the plan says it costs is what the server reports, within
        // the per-key estimate.
        let estimate = bf.params().memory(&allocator);
        assert!(
            total <= estimate && estimate - total < 1024,
            "{}: {total} vs {estimate}",
            allocator.name()
        );
    });
}

#[test]
fn a_filter_planned_for_another_allocator_keeps_its_plan_everywhere() {
    support::on_server(|d| {
        for (i, other) in [Allocator::Jemalloc, Allocator::Libc]
            .into_iter()
            .enumerate()
        {
            for spread in [false, true] {
                let name = format!("copied-{i}-{spread}");
                let builder = || {
                    Bloom::builder(&name)
                        .expected(1_000_000)
                        .fp_rate(0.01)
                        .spread_blocks(spread)
                };
                // As a server with `other` would have created it.
                let made = d.run(builder().plan_for(other.clone()).create()).unwrap();
                let xs = items("c", 0..2000);
                d.run(made.multi_add(&xs)).unwrap();
                // Created again here, with this server's allocator: the
                // stored plan rules, the items are there.
                let again = d.run(builder().create()).unwrap();
                assert_eq!(again.params(), made.params(), "{}", other.name());
                assert_eq!(again.block_keys(), made.block_keys());
                assert!(d.run(again.multi_exists(&xs)).unwrap().iter().all(|&b| b));
                let opened = d.run(Bloom::builder(&name).open()).unwrap();
                assert_eq!(opened.params(), made.params());
                assert!(d.run(opened.exists("c7")).unwrap());
                // Other parameters are still another filter.
                match kind(d.run(Bloom::create(&name, 2_000_000, 0.01))) {
                    Err(ErrorKind::BloomConfigMismatch { detail }) => {
                        assert!(detail.contains("stored"), "{detail}")
                    }
                    other => panic!("expected BloomConfigMismatch, got {other:?}"),
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------
// Redis Cluster and both drivers. Each scenario runs the same sequence of
// every public operation through each driver, on a cluster and on one
// server, and compares what they saw.

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

fn scenario(name: &str, engine: Engine, spread: bool) -> BloomBuilder {
    sized(name, 1_000_000, 0.01, engine).spread_blocks(spread)
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

/// Every public operation of a sized filter, through one driver.
fn exercise(d: &mut Driver, name: &str, engine: Engine, spread: bool) -> Trace {
    let bf = d
        .run(scenario(name, engine, spread).create())
        .expect("create");
    assert!(bf.block_keys().len() >= 2, "{:?}", bf.block_keys());
    d.run(scenario(name, engine, spread).create())
        .expect("create again opens");
    let mismatch = err_text(
        d.run(
            sized(name, 2_000_000, 0.01, engine)
                .spread_blocks(spread)
                .create(),
        ),
    );
    let mut xs = items("x", 0..4000);
    xs.extend(items("x", 0..50));
    let first_adds = sure(in_batches(d, &xs, |c| bf.multi_add(c)).expect("multi_add"));
    let single = vec![
        d.run(bf.add("alice")).expect("add") == Some(true),
        d.run(bf.add("alice")).expect("add") == Some(true),
        d.run(bf.exists("alice")).expect("exists"),
        d.run(bf.exists("bob")).expect("exists"),
    ];
    let mut probe = items("x", 0..4000);
    probe.extend(items("y", 0..4000));
    let found = in_batches(d, &probe, |c| bf.multi_exists(c)).expect("multi_exists");
    let info = d.run(bf.info()).expect("info");
    let approx = d.run(bf.approx_count()).expect("approx_count");
    let again = d
        .run(Bloom::builder(name).engine(engine).open())
        .expect("open");
    let opened = (
        again.params().clone(),
        again.block_keys().to_vec(),
        d.run(again.exists("x1")).expect("exists"),
    );
    let blocks = bf.block_keys().iter().map(|k| get(d, k)).collect();
    d.run(bf.clear()).expect("clear");
    let after_clear = (
        d.run(bf.bits_set()).expect("bits_set"),
        d.run(bf.exists("x1")).expect("exists"),
        d.run(bf.add("x1")).expect("add") == Some(true),
    );
    let lost_key = &bf.block_keys()[1];
    let _: i64 = d.cmd(lost_key, redis::cmd("DEL").arg(lost_key));
    let lost = vec![
        err_text(in_batches(d, &probe, |c| bf.multi_exists(c))),
        err_text(in_batches(d, &probe, |c| bf.multi_add(c))),
        err_text(in_batches(d, &probe, |c| bf.multi_exists(c))),
        err_text(d.run(Bloom::builder(name).engine(engine).open())),
    ];
    d.run(bf.clear()).expect("clear repairs");
    let repaired = d.run(bf.add("x2")).expect("add after repair") == Some(true);
    d.run(bf.destroy()).expect("destroy");
    let mut left_after_destroy = 0;
    for k in bf.all_keys() {
        left_after_destroy += d.cmd::<i64>(&k, redis::cmd("EXISTS").arg(&k));
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
    assert!(trues(&t.found[4000..]) < 40);
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

/// What a JSHash filter saw.
#[derive(Debug, PartialEq)]
struct JsHashTrace {
    adds: Vec<bool>,
    single: Vec<bool>,
    found: Vec<bool>,
    bits: i64,
}

fn php_items() -> Vec<String> {
    (0..300).map(|i| format!("user{i}@example.com")).collect()
}

fn php_exercise(d: &mut Driver, php: &JsHashBloom) -> JsHashTrace {
    let xs = php_items();
    let adds = sure(d.run(php.multi_add(&xs[..200])).expect("multi_add"));
    let single = vec![
        d.run(php.add("new@example.com")).expect("add") == Some(true),
        d.run(php.add("new@example.com")).expect("add") == Some(true),
        d.run(php.exists("new@example.com")).expect("exists"),
        d.run(php.exists("other@example.com")).expect("exists"),
    ];
    let found = d.run(php.multi_exists(&xs)).expect("multi_exists");
    let bits = d.cmd(php.key(), redis::cmd("BITCOUNT").arg(php.key()));
    JsHashTrace {
        adds,
        single,
        found,
        bits,
    }
}

fn check_php_trace(t: &JsHashTrace) {
    assert!(trues(&t.adds) >= 190, "{:?}", t.adds);
    assert_eq!(&t.single[..3], &[true, false, true]);
    assert!(t.found[..200].iter().all(|&b| b));
    assert!(t.bits >= 190);
}

/// [`pregrow`] on the node of the cluster that owns `key`.
fn pregrow_on(cluster: &LocalCluster, key: &str) {
    let node = &cluster.nodes()[owner(cluster, key)];
    pregrow(&mut node.connection(), key, FOLDED_MAX);
}

fn flush_scripts(cluster: &LocalCluster) {
    for n in cluster.nodes() {
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query(&mut n.connection())
            .expect("SCRIPT FLUSH");
    }
}

/// Every element equals the first.
fn all_same<T: PartialEq + std::fmt::Debug>(what: &str, v: &[T]) {
    assert!(v.len() >= 2, "{what}: {} runs", v.len());
    for (i, t) in v.iter().enumerate().skip(1) {
        assert_eq!(t, &v[0], "{what}: run {i} differs from run 0");
    }
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let cluster = support::cluster();
    let server = support::server();
    for (name, engine, spread) in SCENARIOS {
        let traces = RefCell::new(Vec::new());
        support::each_cluster_driver(&cluster, |d| {
            assert!(d.is_cluster());
            let t = exercise(d, name, engine, spread);
            check_trace(&t);
            let owners: BTreeSet<usize> = t.block_keys.iter().map(|k| owner(&cluster, k)).collect();
            if spread {
                assert!(owners.len() >= 2, "{name}: {:?}", t.block_keys);
            } else {
                assert_eq!(owners.len(), 1, "{name}");
            }
            traces.borrow_mut().push(t);
        });
        support::each_driver(&server, |d| {
            traces.borrow_mut().push(exercise(d, name, engine, spread))
        });
        all_same(name, &traces.into_inner());
    }

    // JSHash filters: one key, one script call per operation.
    let php = JsHashBloom::new("bloom_user_email").unwrap();
    let traces = RefCell::new(Vec::new());
    support::each_cluster_driver(&cluster, |d| {
        pregrow_on(&cluster, php.key());
        let t = php_exercise(d, &php);
        check_php_trace(&t);
        traces.borrow_mut().push(t);
    });
    support::each_driver(&server, |d| {
        pregrow(&mut server.connection(), php.key(), FOLDED_MAX);
        traces.borrow_mut().push(php_exercise(d, &php));
    });
    all_same("jshash", &traces.into_inner());

    // Bulk loads, resumed, give the same progress as on one server.
    let xs = items("l", 0..2_345);
    let progress = RefCell::new(Vec::new());
    let load = |d: &mut Driver| {
        let bf = d
            .run(scenario("loaded", Engine::Bitfield, true).create())
            .unwrap();
        let mut first = bf.load(xs.iter().take(1000)).batch(300);
        for op in first.by_ref() {
            d.run(op).unwrap();
        }
        let first = first.progress();
        let rest = d
            .run(
                bf.load(xs.clone())
                    .batch(300)
                    .start(first.done)
                    .into_op(|_| {}),
            )
            .unwrap();
        assert!(d.run(bf.multi_exists(&xs)).unwrap().iter().all(|&b| b));
        let loaded = d
            .run(php.load(xs.clone()).batch(1000).into_op(|_| {}))
            .unwrap();
        let bits = d.run(bf.bits_set()).unwrap();
        progress.borrow_mut().push((first, rest, loaded, bits));
    };
    support::each_cluster_driver(&cluster, |d| {
        pregrow_on(&cluster, php.key());
        load(d)
    });
    support::each_driver(&server, |d| {
        pregrow(&mut server.connection(), php.key(), FOLDED_MAX);
        load(d)
    });
    let progress = progress.into_inner();
    all_same("load", &progress);
    assert_eq!(
        progress[0].1,
        LoadProgress {
            done: 2_345,
            added: 1_345,
            unknown: 0
        }
    );

    // After SCRIPT FLUSH on every node the script engine reloads per node.
    support::each_cluster_driver(&cluster, |d| {
        flush_scripts(&cluster);
        let bf = d
            .run(scenario("after-flush", Engine::Script, true).create())
            .unwrap();
        flush_scripts(&cluster);
        assert!(sure(d.run(bf.multi_add(&xs)).unwrap()).iter().all(|&b| b));
        flush_scripts(&cluster);
        assert!(d.run(bf.multi_exists(&xs)).unwrap().iter().all(|&b| b));
    });
}

#[test]
fn both_drivers_match_on_one_server() {
    let server = support::server();
    for (name, engine, spread) in SCENARIOS {
        let traces = RefCell::new(Vec::new());
        support::each_driver(&server, |d| {
            let t = exercise(d, name, engine, spread);
            check_trace(&t);
            assert_eq!(dbsize(&server), 0);
            traces.borrow_mut().push(t);
        });
        all_same(name, &traces.into_inner());
    }
    let traces = RefCell::new(Vec::new());
    support::each_driver(&server, |d| {
        let php = JsHashBloom::new(&format!("php-{}", d.name())).unwrap();
        pregrow(&mut server.connection(), php.key(), FOLDED_MAX);
        let t = php_exercise(d, &php);
        check_php_trace(&t);
        traces.borrow_mut().push(t);
    });
    all_same("jshash", &traces.into_inner());
    // Bad input is refused before anything is written, through both drivers.
    support::each_driver(&server, |d| {
        assert!(matches!(
            kind(d.run(Bloom::create("f", 1000, 1.5))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            kind(d.run(Bloom::open("a{b}"))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(missing(d.run(Bloom::open("nope"))));
        assert!(matches!(
            kind(d.run(JsHashBloom::new("s").unwrap().add(""))),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert_eq!(dbsize(&server), 0);
    });
}

#[test]
fn both_drivers_reload_scripts_per_node_on_a_real_cluster() {
    let cluster = support::cluster();
    let xs = items("w", 0..3000);
    support::each_cluster_driver(&cluster, |d| {
        for engine in [Engine::Bitfield, Engine::Script] {
            let name = format!("wide-{engine:?}");
            let bf = d.run(scenario(&name, engine, true).create()).unwrap();
            // The blocks' commands as ONE cross-slot pipeline, as a plain
            // client would send them, are refused by the async cluster
            // connection; the driver sends one pipeline per node instead.
            let rt = support::runtime();
            let naive = rt.block_on(async {
                let mut ac = cluster
                    .client()
                    .get_async_connection()
                    .await
                    .expect("async cluster connection");
                let mut pipe = redis::pipe();
                for (key, bits) in bf.block_keys().iter().zip(&bf.params().block_bits) {
                    pipe.cmd("GETBIT").arg(key).arg(*bits);
                }
                pipe.query_async::<Vec<i64>>(&mut ac).await
            });
            assert!(naive.is_err(), "{naive:?}");
            assert_eq!(d.run(bf.bits_set()).unwrap().iter().sum::<u64>(), 0);
            // After SCRIPT FLUSH on every node each node's pipeline reloads.
            flush_scripts(&cluster);
            let added = d.run(bf.multi_add(&xs)).unwrap();
            assert!(sure(added).iter().all(|&b| b));
            flush_scripts(&cluster);
            let found = d.run(bf.multi_exists(&xs)).unwrap();
            assert!(found.iter().all(|&b| b));
        }
    });
}

/// Each operation's batches, counted (each batch is one pipeline per node).
fn batches_of_every_operation(d: &mut Driver, engine: Engine) {
    let name = format!("counted-{engine:?}");
    let (bf, n) = counted(d, scenario(&name, engine, true).create());
    assert_eq!(
        n, 4,
        "spread create: memory and config, each block's node's memory, the blocks, the config"
    );
    let (_, n) = counted(d, scenario(&name, engine, true).create());
    assert_eq!(
        n, 3,
        "spread create of an existing filter: read, check, blocks"
    );
    let owners = bf.block_keys().len();
    assert!(owners >= 2);
    let xs = items("n", 0..1500);
    assert_eq!(counted(d, bf.multi_add(&xs)).1, 1, "multi_add");
    assert_eq!(counted(d, bf.multi_exists(&xs)).1, 1, "multi_exists");
    assert_eq!(counted(d, bf.add("one")).1, 1, "add");
    assert_eq!(counted(d, bf.bits_set()).1, 1, "bits_set");
    assert_eq!(counted(d, bf.approx_count()).1, 1, "approx_count");
    assert_eq!(counted(d, bf.info()).1, 1, "info");
    let (_, n) = counted(d, Bloom::builder(&name).engine(engine).open());
    assert_eq!(n, 2, "open: the config, then every sentinel");
    assert_eq!(counted(d, bf.clear()).1, 1, "clear");
    let (p, n) = counted(d, bf.load(xs.clone()).batch(500).into_op(|_| {}));
    assert_eq!((p.done, n), (1500, 3), "load: one batch per 500 items");
    assert_eq!(counted(d, bf.destroy()).1, 1, "destroy");
    let (tagged, n) = counted(
        d,
        scenario(&format!("{name}-tagged"), engine, false).create(),
    );
    assert_eq!(n, 3, "create: memory and config, the blocks, the config");
    let (_, n) = counted(
        d,
        scenario(&format!("{name}-tagged"), engine, false).create(),
    );
    assert_eq!(n, 2, "create of an existing filter: read, check");
    assert_eq!(counted(d, tagged.multi_add(&xs)).1, 1);
    let php = JsHashBloom::new(&format!("{name}-php")).unwrap();
    // (Read-only: a first write would allocate up to 250 MB.)
    assert_eq!(
        counted(d, php.multi_exists(&xs)).1,
        1,
        "JSHash multi_exists"
    );
    assert_eq!(
        counted(d, php.multi_exists::<&str>(&[])).1,
        0,
        "nothing to send"
    );
}

#[test]
fn every_multi_block_operation_is_one_batch() {
    let server = support::server();
    let cluster = support::cluster();
    for engine in [Engine::Bitfield, Engine::Script] {
        support::each_driver(&server, |d| batches_of_every_operation(d, engine));
        support::each_cluster_driver(&cluster, |d| batches_of_every_operation(d, engine));
    }
}
