//! The rolling sharded store against a real `redis-server`, every test body
//! through both drivers (sync `Connection`, async `AsyncConnection`).

#[path = "support/counting.rs"]
mod counting;
mod support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use counting::counted;
use redis_patterns::keys::{Prefix, cluster_slot};
use redis_patterns::rolling::RollingStore;
use redis_patterns::scripts;
use redis_patterns::{Error, ErrorKind};
use redis_patterns_test_support::LocalServer;
use serde::{Deserialize, Serialize};
use support::Driver;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Tx {
    writer: u32,
    seq: u32,
    amount: i64,
}

fn tx(writer: u32, seq: u32) -> Tx {
    Tx {
        writer,
        seq,
        amount: seq as i64 * 100 + writer as i64,
    }
}

fn hour() -> Duration {
    Duration::from_secs(3600)
}

fn fields<T>(records: &[(String, T)]) -> Vec<&str> {
    records.iter().map(|(f, _)| f.as_str()).collect()
}

fn hget_meta(d: &mut Driver, meta: &str, field: &str) -> Option<i64> {
    d.cmd(meta, redis::cmd("HGET").arg(meta).arg(field))
}

/// Milliseconds from the server's clock (`TIME`), never the machine's.
fn server_now_ms(con: &mut redis::Connection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
    s * 1000 + us / 1000
}

fn pexpiretime(d: &mut Driver, key: &str) -> i64 {
    d.cmd(key, redis::cmd("PEXPIRETIME").arg(key))
}

fn dbsize(server: &LocalServer) -> i64 {
    support::dbsize(&mut server.connection())
}

fn is_invalid<T: std::fmt::Debug>(r: Result<T, Error>, name: &str) {
    match r.as_ref().map_err(Error::kind) {
        Err(ErrorKind::InvalidArgument { name: n, .. }) => assert_eq!(n, name),
        other => panic!("expected invalid {name}, got {other:?}"),
    }
}

fn layout<T: std::fmt::Debug>(r: Result<T, Error>) {
    match r.as_ref().map_err(Error::kind) {
        Err(ErrorKind::RollingLayout { .. }) => {}
        other => panic!("expected RollingLayout, got {other:?}"),
    }
}

#[test]
fn adds_rotate_evict_the_oldest_shard_and_read_back() {
    let server = support::server();
    support::each_driver(&server, |d| {
        // ring = ceil(4 / 2) + 1 = 3 slots of 2 records
        let store = RollingStore::new(4, 2, hour()).unwrap();
        assert_eq!(store.shards(), 3);
        let mut added = Vec::new();
        for i in 0..7 {
            added.push(
                d.run(store.add("m1", &format!("tx{i}"), &tx(0, i)))
                    .unwrap(),
            );
        }
        let slots: Vec<u32> = added.iter().map(|a| a.slot).collect();
        let gens: Vec<u64> = added.iter().map(|a| a.generation).collect();
        assert_eq!(slots, [0, 0, 1, 1, 2, 2, 0]);
        assert_eq!(gens, [0, 0, 1, 1, 2, 2, 3]);
        let evicted: Vec<Option<u64>> = added.iter().map(|a| a.evicted).collect();
        assert_eq!(evicted, [0, 0, 0, 0, 0, 0, 2].map(Some));
        assert!(
            added
                .iter()
                .all(|a| a.replaced == Some(false) && a.misses == 0)
        );

        assert_eq!(d.run(store.len("m1")).unwrap(), 5);
        assert_eq!(d.run(store.get::<Tx>("m1", "tx0")).unwrap(), None);
        assert_eq!(d.run(store.get::<Tx>("m1", "tx1")).unwrap(), None);
        assert_eq!(d.run(store.get::<Tx>("m1", "tx2")).unwrap(), Some(tx(0, 2)));
        assert_eq!(d.run(store.get::<Tx>("m1", "tx6")).unwrap(), Some(tx(0, 6)));
        let recent = d.run(store.recent::<Tx>("m1", 10)).unwrap();
        assert_eq!(fields(&recent), ["tx6", "tx5", "tx4", "tx3", "tx2"]);
        assert_eq!(recent[0].1, tx(0, 6));
        let recent = d.run(store.recent::<Tx>("m1", 3)).unwrap();
        assert_eq!(fields(&recent), ["tx6", "tx5", "tx4"]);
        assert!(d.run(store.recent::<Tx>("m1", 0)).unwrap().is_empty());

        // Stored as plain JSON, like the Java recipe.
        let shard0 = &store.shard_keys("m1").unwrap()[0];
        let raw: String = d.cmd(shard0, redis::cmd("HGET").arg(shard0).arg("tx6"));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&raw).unwrap(),
            serde_json::json!({"writer": 0, "seq": 6, "amount": 600})
        );

        // Another logical key is independent.
        d.run(store.add("m2", "only", &1u8)).unwrap();
        assert_eq!(d.run(store.len("m2")).unwrap(), 1);
        assert_eq!(d.run(store.get::<u8>("m1", "only")).unwrap(), None);

        assert_eq!(d.run(store.clear("m1")).unwrap(), Some(5));
        assert_eq!(d.run(store.len("m1")).unwrap(), 0);
        assert!(d.run(store.recent::<Tx>("m1", 10)).unwrap().is_empty());
        assert_eq!(d.run(store.clear("m2")).unwrap(), Some(1));
        assert_eq!(dbsize(&server), 0);
    });
}

#[test]
fn replacing_a_record_keeps_the_shard_size_and_moves_it_to_the_front() {
    support::on_server(|d| {
        let store = RollingStore::new(2, 2, hour()).unwrap(); // 2 slots of 2
        d.run(store.add("k", "a", "a1")).unwrap();
        d.run(store.add("k", "b", "b1")).unwrap();
        // The head is full, but "a" is in it: replaced in place, no rotation.
        let again = d.run(store.add("k", "a", "a2")).unwrap();
        assert_eq!(again.replaced, Some(true));
        assert_eq!(
            (again.slot, again.generation, again.evicted),
            (0, 0, Some(0))
        );
        assert_eq!(d.run(store.len("k")).unwrap(), 2);
        let recent = d.run(store.recent::<String>("k", 5)).unwrap();
        assert_eq!(
            recent,
            [("a".into(), "a2".into()), ("b".into(), "b1".into())]
        );

        // A field of an older shard written again lands in the head shard;
        // reads see only its newest value, len counts both copies (as the
        // Java recipe would).
        d.run(store.add("k", "c", "c1")).unwrap();
        let b2 = d.run(store.add("k", "b", "b2")).unwrap();
        assert_eq!(b2.replaced, Some(false));
        assert_eq!((b2.slot, b2.generation), (1, 1));
        assert_eq!(d.run(store.len("k")).unwrap(), 4);
        assert_eq!(
            d.run(store.get::<String>("k", "b")).unwrap().as_deref(),
            Some("b2")
        );
        let recent = d.run(store.recent::<String>("k", 5)).unwrap();
        assert_eq!(fields(&recent), ["b", "c", "a"]);
        assert_eq!(recent[0].1, "b2");
    });
}

#[test]
fn a_writer_with_a_stale_head_retries_and_lands_in_the_right_shard() {
    support::on_server(|d| {
        let a = RollingStore::new(3, 1, hour()).unwrap(); // 4 slots of 1
        for i in 0..6 {
            d.run(a.add("k", &format!("f{i}"), &i)).unwrap();
        }
        // Head is slot 5 % 4 = 1, generation 5. A fresh store guesses slot 0.
        let b = RollingStore::new(3, 1, hour()).unwrap();
        let added = d.run(b.add("k", "f6", &6)).unwrap();
        assert_eq!(added.misses, 1);
        assert_eq!(
            (added.slot, added.generation, added.evicted),
            (2, 6, Some(1))
        );
        let added = d.run(b.add("k", "f7", &7)).unwrap();
        assert_eq!(added.misses, 0);
        assert_eq!((added.slot, added.generation), (3, 7));
        // The first store's cache is stale by two rotations: one miss, then
        // fine.
        let added = d.run(a.add("k", "f8", &8)).unwrap();
        assert_eq!(added.misses, 1);
        assert_eq!((added.slot, added.generation), (0, 8));
        let recent = d.run(a.recent::<i32>("k", 10)).unwrap();
        assert_eq!(fields(&recent), ["f8", "f7", "f6", "f5"]);
        // Clones share the cache.
        let c = a.clone();
        assert_eq!(d.run(c.add("k", "f9", &9)).unwrap().misses, 0);
    });
}

#[test]
fn the_script_writes_nothing_when_the_head_is_not_among_the_slots_passed() {
    support::on_server(|d| {
        let store = RollingStore::new(4, 1, hour()).unwrap(); // 5 slots
        for i in 0..3 {
            d.run(store.add("k", &format!("f{i}"), &i)).unwrap();
        }
        let meta = store.meta_key("k").unwrap();
        let hashes = store.shard_keys("k").unwrap();
        let orders = store.order_keys("k").unwrap();
        let pair = |s: usize| [hashes[s].clone(), orders[s].clone()];
        // Head is slot 2 and full; slots 3 and 4 passed: miss.
        let window: Vec<String> = [pair(3), pair(4)].concat();
        let reply = d
            .run(scripts::rolling::add(
                &meta, &window, 3, 5, 1, "x", b"1", 60_000, 120_000,
            ))
            .unwrap();
        assert_eq!(reply, [0, 2, 2, 0]);
        // Head slot passed but not the next one, and the head is full: miss
        // too.
        let reply = d
            .run(scripts::rolling::add(
                &meta,
                &pair(2),
                2,
                5,
                1,
                "x",
                b"1",
                60_000,
                120_000,
            ))
            .unwrap();
        assert_eq!(reply, [0, 2, 2, 0]);
        assert_eq!(d.run(store.len("k")).unwrap(), 3);
        assert_eq!(hget_meta(d, &meta, "head"), Some(2));
        // The whole ring from slot 0 always works (the client's fallback).
        let ring: Vec<String> = (0..5).flat_map(pair).collect();
        let reply = d
            .run(scripts::rolling::add(
                &meta, &ring, 0, 5, 1, "x", b"1", 60_000, 120_000,
            ))
            .unwrap();
        assert_eq!(reply, [1, 3, 3, 0]);
        assert_eq!(d.run(store.get::<i32>("k", "x")).unwrap(), Some(1));
    });
}

#[test]
fn bad_input_is_a_typed_error_and_writes_nothing() {
    let invalid = is_invalid::<RollingStore>;
    invalid(RollingStore::new(10, 0, hour()), "shard_size");
    invalid(RollingStore::new(9, 10, hour()), "limit");
    invalid(RollingStore::new(10, 10, Duration::ZERO), "ttl");
    invalid(RollingStore::new(10, 10, Duration::from_micros(999)), "ttl");
    invalid(RollingStore::new(10_000_000, 1, hour()), "limit");
    is_invalid(Prefix::new("p{"), "prefix");
    invalid(
        RollingStore::builder(10, 1, hour())
            .index_margin(Duration::from_millis(
                redis_patterns::scripts::rolling::ADD_TTL_MS_MAX as u64,
            ))
            .build(),
        "index margin",
    );

    let server = support::server();
    support::each_driver(&server, |d| {
        let store = RollingStore::new(10, 5, hour()).unwrap();
        is_invalid(d.run(store.add("", "f", &1)), "key");
        is_invalid(d.run(store.add("a{b}", "f", &1)), "key");
        is_invalid(d.run(store.add("k", "", &1)), "field");
        is_invalid(d.run(store.get::<i32>("", "f")), "key");
        is_invalid(d.run(store.get::<i32>("k", "")), "field");
        is_invalid(d.run(store.recent::<i32>("", 3)), "key");
        is_invalid(d.run(store.len("")), "key");
        is_invalid(d.run(store.clear("}")), "key");
        // A value JSON cannot represent (a map with non-string keys).
        let mut bad = HashMap::new();
        bad.insert((1, 2), 3);
        match d.run(store.add("k", "f", &bad)).map_err(Error::into_kind) {
            Err(ErrorKind::RollingValue { field, .. }) => assert_eq!(field, "f"),
            other => panic!("expected RollingValue, got {other:?}"),
        }
        assert_eq!(dbsize(&server), 0);

        // Callers that build the arguments themselves meet the script's
        // checks. Sent raw: the typed wrapper refuses all but the odd key
        // count (the script's own check) before sending.
        let meta = store.meta_key("k").unwrap();
        let h = store.shard_keys("k").unwrap();
        let o = store.order_keys("k").unwrap();
        let pair = [h[0].clone(), o[0].clone(), h[1].clone(), o[1].clone()];
        let keys: Vec<&str> = std::iter::once(meta.as_str())
            .chain(pair.iter().map(String::as_str))
            .collect();
        let bad_calls: [(&[&str], [&str; 7], bool); 8] = [
            (&keys, ["0", "3", "0", "f", "1", "1000", "2000"], true), // shard_size 0
            (&keys, ["0", "1", "5", "f", "1", "1000", "2000"], true), // 1 shard
            (&keys, ["3", "3", "5", "f", "1", "1000", "2000"], true), // slot out of ring
            (&keys, ["0", "3", "5", "", "1", "1000", "2000"], true),  // empty field
            (&keys, ["0", "3", "5", "f", "1", "0", "2000"], true),    // ttl 0
            (&keys, ["0", "3", "5", "f", "1", "1000", "999"], true),  // index < ttl
            (&keys[..4], ["0", "3", "5", "f", "1", "1000", "2000"], false), // odd keys
            (&keys[..1], ["0", "3", "5", "f", "1", "1000", "2000"], false), // no slots
        ];
        for (keys, args, typed) in &bad_calls {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let wrapper = scripts::typed_call("rolling.add", keys, &bytes).expect("fits the types");
            assert_eq!(wrapper.is_err(), *typed, "{args:?}");
            let call = support::raw_call::<Vec<i64>>(&scripts::ROLLING_ADD, keys, args);
            match d.run(call).map_err(Error::into_kind) {
                Err(ErrorKind::InvalidArgument { script, .. }) => {
                    assert_eq!(script, Some("rolling.add"))
                }
                other => panic!("expected ScriptArgument, got {other:?}"),
            }
        }
        assert!(scripts::rolling::recent(&meta, &pair, -1).is_err());
        match d
            .run(support::raw_call::<Vec<Option<Vec<u8>>>>(
                &scripts::ROLLING_RECENT,
                &keys,
                &["-1"],
            ))
            .map_err(Error::into_kind)
        {
            Err(ErrorKind::InvalidArgument {
                script: Some(_), ..
            }) => {}
            other => panic!("expected ScriptArgument, got {other:?}"),
        }
        assert_eq!(dbsize(&server), 0);
    });
}

#[test]
fn writers_with_another_layout_are_refused() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let a = RollingStore::new(4, 2, hour()).unwrap(); // 3 slots of 2
        for i in 0..3 {
            d.run(a.add("k", &format!("f{i}"), &i)).unwrap();
        }
        let keys_before = support::all_keys(&mut server.connection());
        let more_shards = RollingStore::new(6, 2, hour()).unwrap(); // 4 slots
        let bigger_shards = RollingStore::new(6, 3, hour()).unwrap(); // 3 slots of 3
        layout(d.run(more_shards.add("k", "x", &1)));
        layout(d.run(bigger_shards.add("k", "x", &1)));
        layout(d.run(more_shards.get::<i32>("k", "f0")));
        layout(d.run(more_shards.recent::<i32>("k", 2)));
        layout(d.run(more_shards.len("k")));
        layout(d.run(more_shards.clear("k")));
        assert_eq!(support::all_keys(&mut server.connection()), keys_before);
        assert_eq!(d.run(a.len("k")).unwrap(), 3);
        assert_eq!(d.run(a.get::<i32>("k", "x")).unwrap(), None);
    });
}

#[test]
fn shards_and_index_expire_as_configured() {
    support::on_server_with_connection(|d, con| {
        // 2 slots of 1 record: every add opens a new shard.
        let store = RollingStore::new(1, 1, Duration::from_secs(5)).unwrap();
        let meta = store.meta_key("k").unwrap();
        let hashes = store.shard_keys("k").unwrap();
        let orders = store.order_keys("k").unwrap();

        let before = server_now_ms(con);
        d.run(store.add("k", "a", &1)).unwrap();
        let after = server_now_ms(con);
        let shard0 = pexpiretime(d, &hashes[0]);
        assert!(
            (before + 5000..=after + 5000).contains(&shard0),
            "shard expires at {shard0}, added between {before} and {after}"
        );
        // Set by the same script call, but Redis 7.0 reads the clock anew
        // for each PEXPIRE inside a script: within the call, not equal.
        let order0 = pexpiretime(d, &orders[0]);
        assert!(
            (shard0..=after + 5000).contains(&order0),
            "{order0} {shard0}"
        );
        let meta_at = pexpiretime(d, &meta);
        assert!((before + 65_000..=after + 65_000).contains(&meta_at));
        let ttl: i64 = d.cmd(&meta, redis::cmd("TTL").arg(&meta));
        assert!((64..=65).contains(&ttl), "index TTL {ttl}");

        std::thread::sleep(Duration::from_millis(20));
        let before = server_now_ms(con);
        d.run(store.add("k", "b", &2)).unwrap();
        let after = server_now_ms(con);
        // The older shard keeps its own expiry; the new one and the index
        // move.
        assert_eq!(pexpiretime(d, &hashes[0]), shard0);
        let shard1 = pexpiretime(d, &hashes[1]);
        assert!((before + 5000..=after + 5000).contains(&shard1));
        assert!(shard1 > shard0);
        assert!(pexpiretime(d, &meta) >= shard1 + 60_000);

        // A custom index margin.
        let store2 = RollingStore::builder(1, 1, Duration::from_secs(5))
            .index_margin(Duration::from_secs(2))
            .build()
            .unwrap();
        assert_eq!(store2.index_ttl(), Duration::from_secs(7));
        let before = server_now_ms(con);
        d.run(store2.add("k2", "a", &1)).unwrap();
        let after = server_now_ms(con);
        let m2 = pexpiretime(d, &store2.meta_key("k2").unwrap());
        assert!((before + 7000..=after + 7000).contains(&m2));

        // Real expiry with short TTLs (150 ms shards, index 150 ms later).
        let quick = RollingStore::builder(1, 1, Duration::from_millis(150))
            .index_margin(Duration::from_millis(150))
            .build()
            .unwrap();
        d.run(quick.add("q", "a", &1)).unwrap();
        d.run(quick.add("q", "b", &2)).unwrap();
        assert_eq!(d.run(quick.len("q")).unwrap(), 2);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(d.run(quick.len("q")).unwrap(), 0);
        assert_eq!(d.run(quick.get::<i32>("q", "b")).unwrap(), None);
        let qmeta = quick.meta_key("q").unwrap();
        let exists: i64 = d.cmd(&qmeta, redis::cmd("EXISTS").arg(&qmeta));
        assert_eq!(exists, 0);
        // The store starts over, at the slot its cache expects.
        let again = d.run(quick.add("q", "c", &3)).unwrap();
        assert_eq!((again.generation, again.misses), (0, 0));
    });
}

#[test]
fn eight_concurrent_writers_never_overfill_and_evict_the_oldest() {
    const WRITERS: u32 = 8;
    const ADDS: u32 = 5_000;
    const LIMIT: u64 = 10_000;
    const SHARD: u64 = 1_000;
    let server = support::server();
    let url = server.url();
    support::each_driver(&server, |d| {
        let store = RollingStore::new(LIMIT, SHARD, hour()).unwrap();
        let hashes = store.shard_keys("merchant").unwrap();
        let done = Arc::new(AtomicBool::new(false));

        // A sampler takes atomic snapshots (MULTI/EXEC of every shard's HLEN,
        // and the len script) while the writers run.
        let sampler = {
            let mut con = server.connection();
            let mut sd = d.another(&url);
            let (store, hashes, done) = (store.clone(), hashes.clone(), done.clone());
            std::thread::spawn(move || {
                let mut samples = 0u32;
                let mut max_total = 0i64;
                while !done.load(Ordering::Relaxed) {
                    let mut pipe = redis::pipe();
                    pipe.atomic();
                    for h in &hashes {
                        pipe.cmd("HLEN").arg(h);
                    }
                    let lens: Vec<i64> = pipe.query(&mut con).unwrap();
                    let total: i64 = lens.iter().sum();
                    assert!(lens.iter().all(|&n| n <= SHARD as i64), "{lens:?}");
                    assert!(total <= (LIMIT + SHARD) as i64, "{total}");
                    assert!(sd.run(store.len("merchant")).unwrap() <= LIMIT + SHARD);
                    max_total = max_total.max(total);
                    samples += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
                (samples, max_total)
            })
        };

        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let mut wd = d.another(&url);
                // Each writer has its own store, like separate processes: no
                // shared head cache, so stale guesses (misses) happen.
                let store = RollingStore::new(LIMIT, SHARD, hour()).unwrap();
                std::thread::spawn(move || {
                    let mut gens = Vec::with_capacity(ADDS as usize);
                    let mut misses = 0;
                    for i in 0..ADDS {
                        let added = wd
                            .run(store.add("merchant", &format!("w{w}:{i}"), &tx(w, i)))
                            .unwrap();
                        assert_eq!(added.replaced, Some(false));
                        misses += added.misses;
                        gens.push(added.generation);
                    }
                    (gens, misses)
                })
            })
            .collect();
        let mut generation: HashMap<String, u64> = HashMap::new();
        let mut per_gen: BTreeMap<u64, u64> = BTreeMap::new();
        let mut misses = 0;
        for (w, handle) in writers.into_iter().enumerate() {
            let (gens, m) = handle.join().unwrap();
            misses += m;
            // A writer's adds are sequential, so its generations never go
            // back.
            assert!(gens.windows(2).all(|p| p[0] <= p[1]));
            for (i, g) in gens.into_iter().enumerate() {
                generation.insert(format!("w{w}:{i}"), g);
                *per_gen.entry(g).or_default() += 1;
            }
        }
        done.store(true, Ordering::Relaxed);
        let (samples, max_total) = sampler.join().unwrap();
        assert!(samples > 0);

        // Every shard generation received exactly shard_size records: no
        // duplicate shard, no overfilled shard, 40 generations in all.
        let total = (WRITERS * ADDS) as u64;
        assert_eq!(per_gen.len() as u64, total / SHARD);
        assert!(per_gen.values().all(|&n| n == SHARD), "{per_gen:?}");

        let mut present: HashSet<String> = HashSet::new();
        for h in &hashes {
            let shard: HashMap<String, String> = d.cmd(h, redis::cmd("HGETALL").arg(h));
            assert!(shard.len() as u64 <= SHARD);
            // One shard holds exactly one generation.
            let gens: HashSet<u64> = shard.keys().map(|f| generation[f]).collect();
            assert!(gens.len() <= 1, "{h} holds generations {gens:?}");
            for (f, v) in shard {
                let t: Tx = serde_json::from_str(&v).unwrap();
                assert_eq!(format!("w{}:{}", t.writer, t.seq), f);
                present.insert(f);
            }
        }
        let len = d.run(store.len("merchant")).unwrap();
        assert_eq!(len, present.len() as u64);
        assert_eq!(len, LIMIT + SHARD); // the ring is full: 11 shards of 1,000
        assert!(len >= LIMIT);

        // The evicted records are the oldest ones, and nothing newer than the
        // newest evicted record is missing.
        let newest_evicted = generation
            .iter()
            .filter(|(f, _)| !present.contains(*f))
            .map(|(_, &g)| g)
            .max()
            .unwrap();
        let oldest_present = present.iter().map(|f| generation[f]).min().unwrap();
        assert!(newest_evicted < oldest_present);
        for (f, &g) in &generation {
            assert_eq!(
                present.contains(f),
                g > newest_evicted,
                "{f} generation {g}"
            );
        }
        // Per writer, by sequence number: what survives is a suffix.
        for w in 0..WRITERS {
            let kept: Vec<bool> = (0..ADDS)
                .map(|i| present.contains(&format!("w{w}:{i}")))
                .collect();
            let first_kept = kept.iter().position(|&k| k).unwrap_or(kept.len());
            assert!(kept[first_kept..].iter().all(|&k| k), "writer {w}");
        }
        // recent() agrees: newest generation first.
        let recent = d.run(store.recent::<Tx>("merchant", 2_500)).unwrap();
        assert_eq!(recent.len(), 2_500);
        let gens: Vec<u64> = recent.iter().map(|(f, _)| generation[f]).collect();
        assert!(gens.windows(2).all(|p| p[0] >= p[1]));
        assert_eq!(gens[0], *per_gen.keys().last().unwrap());
        eprintln!(
            "{}: {samples} snapshots (largest total {max_total}), {misses} head misses over {total} adds",
            d.name()
        );
    });
}

#[test]
fn one_logical_key_lives_in_one_cluster_slot() {
    let store = RollingStore::new(10_000, 1_000, hour()).unwrap();
    let meta = store.meta_key("merchant:42").unwrap();
    let slot = cluster_slot(meta.as_bytes());
    let all: Vec<String> = store
        .shard_keys("merchant:42")
        .unwrap()
        .into_iter()
        .chain(store.order_keys("merchant:42").unwrap())
        .collect();
    assert_eq!(all.len(), 22);
    assert!(all.iter().all(|k| cluster_slot(k.as_bytes()) == slot));
    assert_eq!(slot, cluster_slot(b"merchant:42"));

    let slots: HashSet<u16> = (0..200)
        .map(|i| cluster_slot(store.meta_key(&format!("merchant:{i}")).unwrap().as_bytes()))
        .collect();
    assert!(slots.len() > 150, "200 keys in only {} slots", slots.len());
}

#[test]
fn every_operation_runs_on_both_drivers() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let store = RollingStore::builder(2, 1, hour())
            .prefix(Prefix::new("p:").unwrap())
            .build()
            .unwrap();
        assert_eq!(store.prefix().as_str(), "p:");
        assert_eq!(store.meta_key("k").unwrap(), "p:{k}");
        for i in 0..4u32 {
            d.run(store.add("k", &format!("f{i}"), &tx(1, i))).unwrap();
        }
        assert_eq!(d.run(store.len("k")).unwrap(), 3);
        assert_eq!(d.run(store.get::<Tx>("k", "f3")).unwrap(), Some(tx(1, 3)));
        assert_eq!(d.run(store.get::<Tx>("k", "f0")).unwrap(), None);
        let recent = d.run(store.recent::<Tx>("k", 2)).unwrap();
        assert_eq!(fields(&recent), ["f3", "f2"]);
        assert_eq!(d.run(store.clear("k")).unwrap(), Some(3));
        assert_eq!(dbsize(&server), 0, "{}", d.name());
    });
}

#[test]
fn one_record_shards_under_contention_miss_retry_and_stay_exact() {
    // Every add rotates, so concurrent writers' guesses go stale all the
    // time: the miss/retry path and the whole-ring fallback run for real.
    const WRITERS: u32 = 8;
    const ADDS: u32 = 400;
    let server = support::server();
    let url = server.url();
    support::each_driver(&server, |d| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let mut wd = d.another(&url);
                let store = RollingStore::new(8, 1, hour()).unwrap(); // 9 slots of 1
                std::thread::spawn(move || {
                    (0..ADDS)
                        .map(|i| {
                            let a = wd.run(store.add("hot", &format!("w{w}:{i}"), &i)).unwrap();
                            (format!("w{w}:{i}"), a)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut by_gen: BTreeMap<u64, String> = BTreeMap::new();
        let (mut misses, mut whole_ring) = (0u32, 0u32);
        for h in writers {
            for (f, a) in h.join().unwrap() {
                misses += a.misses;
                whole_ring += u32::from(a.misses >= 3);
                assert!(a.misses <= 3);
                assert_eq!(a.evicted, Some(u64::from(a.generation >= 9)));
                assert_eq!(a.slot as u64, a.generation % 9);
                // Every generation is exactly one record.
                assert!(by_gen.insert(a.generation, f).is_none());
            }
        }
        let total = (WRITERS * ADDS) as u64;
        assert_eq!(by_gen.len() as u64, total);
        assert_eq!(*by_gen.keys().last().unwrap(), total - 1);
        let store = RollingStore::new(8, 1, hour()).unwrap();
        let recent = d.run(store.recent::<u32>("hot", 100)).unwrap();
        let expected: Vec<&str> = by_gen.values().rev().take(9).map(String::as_str).collect();
        assert_eq!(fields(&recent), expected);
        assert_eq!(d.run(store.len("hot")).unwrap(), 9);
        eprintln!(
            "{}: {misses} head misses over {total} one-record-shard adds, {whole_ring} whole-ring fallbacks",
            d.name()
        );
    });
}

#[test]
fn runs_unchanged_on_a_real_cluster() {
    let cluster = support::cluster();
    support::each_cluster_driver(&cluster, |d| {
        assert!(d.is_cluster());
        let store = RollingStore::new(30, 10, Duration::from_secs(60)).expect("valid store");
        for k in 0..12 {
            let key = format!("merchant:{k}");
            for i in 0..45 {
                d.run(store.add(&key, &format!("tx{i}"), &i))
                    .expect("add on a cluster");
            }
            assert_eq!(
                d.run(store.get::<i64>(&key, "tx44")).expect("get"),
                Some(44)
            );
            assert_eq!(
                d.run(store.get::<i64>(&key, "tx0")).expect("get"),
                None,
                "evicted"
            );
            let recent: Vec<(String, i64)> = d.run(store.recent(&key, 3)).expect("recent");
            assert_eq!(
                recent.iter().map(|(_, v)| *v).collect::<Vec<_>>(),
                [44, 43, 42]
            );
        }
        // A stale head on a cluster: the head is slot 2, a fresh store
        // guesses slot 0, misses once, then writes.
        for i in 0..25 {
            d.run(store.add("stale", &format!("tx{i}"), &i)).unwrap();
        }
        let fresh = RollingStore::new(30, 10, Duration::from_secs(60)).unwrap();
        let added = d.run(fresh.add("stale", "tx25", &25)).unwrap();
        assert_eq!((added.misses, added.slot, added.generation), (1, 2, 2));
        assert_eq!(d.run(fresh.len("stale")).unwrap(), 26);
        // The logical keys spread over the nodes; each one's keys stay on
        // one.
        support::keys_spread(&cluster);
    });
}

#[test]
fn an_add_is_one_call_and_each_miss_one_more() {
    support::on_server(|d| {
        // 101 slots of 1: every add rotates.
        let a = RollingStore::new(100, 1, hour()).unwrap();
        for i in 0..50 {
            let (added, sent) = counted(d, a.add("k", &format!("f{i}"), &i));
            assert_eq!((added.misses, sent), (0, 1), "{}", d.name());
        }
        // A fresh store guesses slot 0 while the head is slot 49: one miss
        // (2 slots passed), then a window of 4 from the reported head.
        let b = RollingStore::new(100, 1, hour()).unwrap();
        let (added, sent) = counted(d, b.add("k", "g", &0));
        assert_eq!((added.misses, sent, added.slot), (1, 2, 50));
        // Building an op sends nothing and guesses when it starts: an op
        // built before other adds still finds the head in one call.
        let late = b.add("k", "h", &0);
        d.run(b.add("k", "i", &0)).unwrap();
        let (added, sent) = counted(d, late);
        assert_eq!((added.misses, sent, added.slot), (0, 1, 52));
        assert_eq!(d.run(a.len("k")).unwrap(), 53);
    });
}
