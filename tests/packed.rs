//! Packed fixed-width records against a real redis-server, every test body
//! through both drivers (sync `Connection`, async `AsyncConnection`).

#[path = "support/counting.rs"]
mod counting;
#[path = "support/everywhere.rs"]
mod everywhere;
mod support;

use redis_patterns::packed::{ByteArray, Bytes, IntField, Layout, Le, PackedRecords};
use redis_patterns::scripts;
use redis_patterns::{Error, ErrorKind};
use support::Driver;

fn strlen(d: &mut Driver, key: &str) -> u64 {
    d.cmd(key, redis::cmd("STRLEN").arg(key))
}

fn record(id: u64) -> [u8; 5] {
    let b = (id as u32).to_le_bytes();
    [b[0], b[1], b[2], b[3], 0xAB]
}

#[test]
fn records_round_trip_at_shard_boundaries() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let ips = 100;
        let p = PackedRecords::builder("rec", ByteArray::<5>, 10_000)
            .ids_per_shard(ips)
            .build()
            .unwrap();
        let mut ids = vec![0, p.max_id()];
        for k in 1..=3 {
            ids.push(k * ips - 1);
            ids.push(k * ips);
        }
        for &id in &ids {
            d.run(p.set(id, &record(id))).unwrap();
        }
        for &id in &ids {
            assert_eq!(d.run(p.get(id)).unwrap(), record(id), "id {id}");
        }
        // Last record of shard k-1 and first record of shard k.
        assert_eq!(
            p.locate(ips - 1).unwrap(),
            ("rec:0".to_string(), (ips - 1) * 5)
        );
        assert_eq!(p.locate(ips).unwrap(), ("rec:1".to_string(), 0));
        let raw: Vec<u8> = d.cmd(
            "rec:0",
            redis::cmd("GETRANGE")
                .arg("rec:0")
                .arg((ips - 1) * 5)
                .arg(ips * 5 - 1),
        );
        assert_eq!(raw, record(ips - 1));
        let raw: Vec<u8> = d.cmd("rec:1", redis::cmd("GETRANGE").arg("rec:1").arg(0).arg(4));
        assert_eq!(raw, record(ips));
        // Dense layout: every touched shard has its full length.
        for k in 0..=3 {
            assert_eq!(strlen(d, &format!("rec:{k}")), ips * 5);
        }
        // Neighbours of written ids stay zero; never-written ids read as zero.
        assert_eq!(d.run(p.get(ips - 2)).unwrap(), [0; 5]);
        assert_eq!(d.run(p.get(5_000)).unwrap(), [0; 5]);
        // Batch get in the order asked, across shards.
        let order = [3 * ips, 0, 2 * ips - 1, 5_000, ips];
        let got = d.run(p.get_many(&order)).unwrap();
        let want: Vec<[u8; 5]> = order
            .iter()
            .map(|&id| if id == 5_000 { [0; 5] } else { record(id) })
            .collect();
        assert_eq!(got, want);
        // No ids: nothing asked, nothing sent.
        let mut con = server.connection();
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(&mut con)
            .unwrap();
        assert!(d.run(p.get_many(&[])).unwrap().is_empty());
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut con)
            .unwrap();
        assert!(!stats.contains("cmdstat_getrange"), "{stats}");
    });
}

#[test]
fn set_many_writes_one_call_per_shard_and_scan_decodes_whole_shards() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let p = PackedRecords::builder("lvl", Le::<u16>::new(), 999)
            .ids_per_shard(64)
            .build()
            .unwrap();
        let items: Vec<(u64, u16)> = (0..1000u64).map(|id| (id, (id % 7) as u16 + 1)).collect();
        d.run(p.set_many(&items)).unwrap();
        assert_eq!(p.shards(), 16);
        assert_eq!(support::dbsize(&mut server.connection()), 16);
        assert_eq!(d.run(p.get(777)).unwrap(), (777 % 7) as u16 + 1);
        let counts = d.run(p.count_by(|v| (*v != 0).then_some(*v))).unwrap();
        for level in 1..=7u16 {
            let want = (0..1000u64)
                .filter(|id| (id % 7) as u16 + 1 == level)
                .count() as u64;
            assert_eq!(counts[&level], want, "level {level}");
        }
        let (seen, _) = d
            .run(p.scan((0u64, None::<u64>), |(seen, last), id, v| {
                assert_eq!(v, (id % 7) as u16 + 1);
                assert!(last.is_none_or(|l| l < id));
                *last = Some(id);
                *seen += 1;
            }))
            .unwrap();
        // The last shard is reserved whole (64 ids) but ids past max_id are not visited.
        assert_eq!(seen, 1000);
    });
}

/// A scan longer than one batch (8 MiB shards: two per batch of
/// `SCAN_BATCH_BYTES`) visits every stored record once, in id order.
#[test]
fn scan_spans_several_batches_in_id_order() {
    support::on_server(|d| {
        let ips = 8 << 20;
        let p = PackedRecords::builder("big", Bytes(1), 5 * ips - 1)
            .ids_per_shard(ips)
            .layout(Layout::Sparse)
            .build()
            .unwrap();
        assert_eq!(
            redis_patterns::packed::PackedLayout::SCAN_BATCH_BYTES / p.shard_bytes(),
            2
        );
        // Shard 3 is never written; the others hold their first 3 ids.
        let ids: Vec<u64> = [0, 1, 2, 4]
            .iter()
            .flat_map(|s| (0..3).map(move |i| s * ips + i))
            .collect();
        let items: Vec<(u64, Vec<u8>)> = ids
            .iter()
            .map(|&id| (id, vec![1 + (id / ips) as u8]))
            .collect();
        d.run(p.set_many(&items)).unwrap();
        let scan = p.scan(Vec::new(), |all, id, rec| all.push((id, rec[0])));
        let (seen, sends) = counting::counted(d, scan);
        let want: Vec<(u64, u8)> = items.iter().map(|(id, v)| (*id, v[0])).collect();
        assert_eq!(seen, want, "{}", d.name());
        // Five shards, two per batch.
        assert_eq!(sends, 3);
    });
}

#[test]
fn add_is_an_atomic_read_modify_write_of_one_field() {
    support::on_server(|d| {
        let p = PackedRecords::new("cnt", ByteArray::<8>, 1_000).unwrap();
        let logins = IntField {
            offset: 2,
            size: 2,
            signed: false,
        };
        let balance = IntField {
            offset: 4,
            size: 4,
            signed: true,
        };
        d.run(p.set(7, &[9, 9, 0, 0, 0, 0, 0, 0])).unwrap();
        assert_eq!(d.run(p.add(7, logins, 1)).unwrap(), 1);
        assert_eq!(d.run(p.add(7, logins, 65_533)).unwrap(), 65_534);
        assert_eq!(d.run(p.add(7, balance, -5)).unwrap(), -5);
        assert_eq!(
            d.run(p.add(7, balance, 2_147_483_647)).unwrap(),
            2_147_483_642
        );
        let rec = d.run(p.get(7)).unwrap();
        assert_eq!(&rec[..2], &[9, 9]);
        assert_eq!(u16::from_le_bytes([rec[2], rec[3]]), 65_534);
        assert_eq!(
            i32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]),
            2_147_483_642
        );
        // Overflow: typed error, record unchanged.
        match d.run(p.add(7, logins, 2)).map_err(Error::into_kind) {
            Err(ErrorKind::Overflow { detail, .. }) => {
                assert!(detail.contains("65534"), "{detail}")
            }
            other => panic!("expected Overflow, got {other:?}"),
        }
        assert!(matches!(
            d.run(p.add(7, balance, 6)).map_err(Error::into_kind),
            Err(ErrorKind::Overflow { .. })
        ));
        assert!(matches!(
            d.run(p.add(8, logins, -1)).map_err(Error::into_kind),
            Err(ErrorKind::Overflow { .. })
        ));
        assert_eq!(d.run(p.get(7)).unwrap(), rec);
        assert_eq!(d.run(p.get(8)).unwrap(), [0; 8]);
        // A 6-byte field reaches 2^48 - 1 exactly.
        let wide = IntField {
            offset: 0,
            size: 6,
            signed: false,
        };
        assert_eq!(d.run(p.add(9, wide, (1 << 48) - 1)).unwrap(), (1 << 48) - 1);
        assert!(matches!(
            d.run(p.add(9, wide, 1)).map_err(Error::into_kind),
            Err(ErrorKind::Overflow { .. })
        ));
        // Field outside the record or too wide: refused before sending.
        for (offset, size) in [(6, 4), (0, 7)] {
            let bad = IntField {
                offset,
                size,
                signed: false,
            };
            assert!(matches!(
                d.run(p.add(7, bad, 1)).map_err(Error::into_kind),
                Err(ErrorKind::InvalidArgument { .. })
            ));
        }
    });
}

#[test]
fn compare_and_set_replaces_only_the_expected_record() {
    support::on_server(|d| {
        let p = PackedRecords::new("cas", Le::<u32>::new(), 100).unwrap();
        assert_eq!(d.run(p.compare_and_set(3, &0, &10)).unwrap(), Ok(()));
        assert_eq!(d.run(p.compare_and_set(3, &0, &20)).unwrap(), Err(10));
        assert_eq!(d.run(p.compare_and_set(3, &10, &20)).unwrap(), Ok(()));
        assert_eq!(d.run(p.get(3)).unwrap(), 20);
    });
}

#[test]
fn sparse_layout_grows_only_as_written() {
    support::on_server(|d| {
        let dense = PackedRecords::new("d", Le::<u32>::new(), 1_000_000).unwrap();
        let sparse = PackedRecords::builder("s", Le::<u32>::new(), 1_000_000)
            .layout(Layout::Sparse)
            .build()
            .unwrap();
        assert_eq!(sparse.layout(), Layout::Sparse);
        d.run(dense.set(1, &5)).unwrap();
        d.run(sparse.set(1, &5)).unwrap();
        assert_eq!(strlen(d, "d:0"), dense.shard_bytes());
        assert_eq!(strlen(d, "s:0"), 8);
        assert_eq!(d.run(sparse.get(1)).unwrap(), 5);
        // The default shard is just under 64 KiB.
        assert!(dense.shard_bytes() <= 65_530 && dense.shard_bytes() > 65_530 - 4);
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let server = support::server();
    support::each_driver(&server, |d| {
        assert!(matches!(
            PackedRecords::new("", Le::<u8>::new(), 10).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { name, .. }) if name == "base"
        ));
        assert!(matches!(
            PackedRecords::new("z", Bytes(0), 10).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { name, .. }) if name == "width"
        ));
        assert!(matches!(
            PackedRecords::builder("z", Bytes(4), 10)
                .ids_per_shard(0)
                .build()
                .map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        assert!(matches!(
            PackedRecords::builder("z", Bytes(4), 10)
                .ids_per_shard(1 << 30)
                .build()
                .map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { .. })
        ));
        // The huge-offset trap: an id near 2^32 is refused by the configured maximum.
        let p = PackedRecords::new("users", Bytes(4), 10_000_000).unwrap();
        match d
            .run(p.set(4_294_967_295, &vec![1, 2, 3, 4]))
            .map_err(Error::into_kind)
        {
            Err(ErrorKind::IdOutOfRange { id, max }) => {
                assert_eq!((id, max), (4_294_967_295, 10_000_000))
            }
            other => panic!("expected IdOutOfRange, got {other:?}"),
        }
        assert!(matches!(
            d.run(p.get(10_000_001)).map_err(Error::into_kind),
            Err(ErrorKind::IdOutOfRange { .. })
        ));
        assert!(matches!(
            d.run(p.get_many(&[1, 10_000_001]))
                .map_err(Error::into_kind),
            Err(ErrorKind::IdOutOfRange { .. })
        ));
        // One bad item in a batch: nothing of the batch is written.
        assert!(matches!(
            d.run(p.set_many(&[(1, vec![1, 2, 3, 4]), (2, vec![1, 2, 3])])).map_err(Error::into_kind),
            Err(ErrorKind::InvalidArgument { name, .. }) if name == "record"
        ));
        assert!(matches!(
            d.run(p.set_many(&[(1, vec![1, 2, 3, 4]), (u64::MAX, vec![1, 2, 3, 4])]))
                .map_err(Error::into_kind),
            Err(ErrorKind::IdOutOfRange { .. })
        ));
        assert!(matches!(
            d.run(p.add(
                99_999_999,
                IntField {
                    offset: 0,
                    size: 2,
                    signed: false
                },
                1
            ))
            .map_err(Error::into_kind),
            Err(ErrorKind::IdOutOfRange { .. })
        ));
        let mut con = server.connection();
        assert_eq!(support::dbsize(&mut con), 0);
        // The scripts check their arguments too (callers from other languages).
        // A 7-byte field: the typed wrapper refuses it before sending, and
        // the script itself (sent raw) refuses it before writing.
        assert!(scripts::packed::add("raw:0", "{raw:0}:req", 0, 0, 7, false, 1, 0).is_err());
        let refused = [
            d.run(scripts::packed::put("raw:0", 0, &["4294967296", "abcd"])),
            d.run(support::raw_call::<i64>(
                &scripts::PACKED_ADD,
                &["raw:0"],
                &["0", "0", "7", "0", "1"],
            )),
            d.run(scripts::packed::swap("raw:0", 0, 0, b"ab", b"abc"))
                .map(|_| 0),
        ];
        for r in refused {
            assert!(
                matches!(
                    r.as_ref().map_err(Error::kind),
                    Err(ErrorKind::InvalidArgument {
                        script: Some(_),
                        ..
                    })
                ),
                "{r:?}"
            );
        }
        assert_eq!(support::dbsize(&mut con), 0);
    });
}

/// Multi-id calls send one batch each (one pipeline per node), and a scan
/// of default shards one per 256 shards: 20 shards on a cluster are not 20
/// round trips.
fn one_batch_per_call(d: &mut Driver) {
    let p = PackedRecords::builder("one", Le::<u32>::new(), 1_999)
        .ids_per_shard(100)
        .build()
        .unwrap();
    let items: Vec<(u64, u32)> = (0..2_000).map(|id| (id, id as u32 + 1)).collect();
    assert_eq!(counting::counted(d, p.set_many(&items)), ((), 1));
    let ids: Vec<u64> = (0..2_000).step_by(7).collect();
    let (got, sends) = counting::counted(d, p.get_many(&ids));
    assert_eq!(got, ids.iter().map(|&id| id as u32 + 1).collect::<Vec<_>>());
    assert_eq!(sends, 1);
    assert_eq!(
        counting::counted(d, p.scan(0, |n, _, _| *n += 1)),
        (2_000, 1)
    );
    assert_eq!(counting::counted(d, p.get_many(&[])), (vec![], 0));
}

#[test]
fn multi_id_calls_send_one_batch_on_one_server_and_a_cluster() {
    support::on_server_and_cluster(one_batch_per_call);
}

/// Every public operation of packed records, through one driver; returns
/// what each one answered (as text) so two servers and drivers can be
/// compared.
fn every_operation(d: &mut Driver) -> Vec<String> {
    let mut log = everywhere::Log::default();
    // 10 ids per shard: ids 0..=199 use shards rec:0 .. rec:19.
    let p = PackedRecords::builder("rec", ByteArray::<5>, 199)
        .ids_per_shard(10)
        .build()
        .unwrap();
    d.run(p.set(0, &record(0))).unwrap();
    d.run(p.set(199, &record(199))).unwrap();
    log.note("get", &d.run(p.get(199)).unwrap());
    log.note("get never written", &d.run(p.get(5)).unwrap());
    log.note("get shard never written", &d.run(p.get(55)).unwrap());
    let items: Vec<(u64, [u8; 5])> = (0..200).step_by(3).map(|id| (id, record(id))).collect();
    d.run(p.set_many(&items)).unwrap();
    let ids: Vec<u64> = (0..200).rev().step_by(4).collect();
    let got = d.run(p.get_many(&ids)).unwrap();
    for (id, rec) in ids.iter().zip(&got) {
        let want = if id % 3 == 0 || *id == 199 {
            record(*id)
        } else {
            [0; 5]
        };
        assert_eq!(rec, &want, "id {id}");
    }
    log.note("get_many", &got);
    let scanned = d
        .run(p.scan(Vec::new(), |all, id, rec| all.push((id, rec))))
        .unwrap();
    assert_eq!(scanned.len(), 200);
    log.note("scan", &scanned);
    log.note("count_by", &{
        let mut c: Vec<_> = d
            .run(p.count_by(|r| (r[4] == 0xAB).then_some(r[0] % 4)))
            .unwrap()
            .into_iter()
            .collect();
        c.sort();
        c
    });
    let field = IntField {
        offset: 0,
        size: 2,
        signed: false,
    };
    log.note("add", &d.run(p.add(42, field, 7)).unwrap());
    log.note("add again", &d.run(p.add(42, field, 65_000)).unwrap());
    match d.run(p.add(42, field, 1_000)).map_err(Error::into_kind) {
        Err(ErrorKind::Overflow { .. }) => {}
        other => panic!("expected Overflow, got {other:?}"),
    }
    log.note("after overflow", &d.run(p.get(42)).unwrap());
    log.note(
        "cas hit",
        &d.run(p.compare_and_set(3, &record(3), &[1, 2, 3, 4, 5]))
            .unwrap(),
    );
    log.note(
        "cas miss",
        &d.run(p.compare_and_set(3, &record(3), &[9; 5])).unwrap(),
    );
    log.note(
        "cas unwritten",
        &d.run(p.compare_and_set(101, &[0; 5], &[7; 5])).unwrap(),
    );

    // Sparse shards and a run-time width.
    let sparse = PackedRecords::builder("sp", Bytes(3), 9_999)
        .ids_per_shard(100)
        .layout(Layout::Sparse)
        .build()
        .unwrap();
    let items: Vec<(u64, Vec<u8>)> = (0..10_000)
        .step_by(997)
        .map(|id| (id, vec![id as u8, 1, 2]))
        .collect();
    d.run(sparse.set_many(&items)).unwrap();
    log.note(
        "sparse get_many",
        &d.run(sparse.get_many(&[0, 997, 9_970, 9_999])).unwrap(),
    );
    let n = d.run(sparse.scan(0, |n, _, _| *n += 1)).unwrap();
    log.note("sparse scanned", &n);
    let ints = PackedRecords::builder("le", Le::<i32>::new(), 99)
        .ids_per_shard(7)
        .build()
        .unwrap();
    let items: Vec<(u64, i32)> = (0..100).map(|id| (id, -(id as i32))).collect();
    d.run(ints.set_many(&items)).unwrap();
    log.note("le get_many", &d.run(ints.get_many(&[0, 50, 99])).unwrap());
    log.0
}

/// Every shard string `every_operation` writes, with its length.
fn dump(d: &mut Driver) -> Vec<(String, Option<Vec<u8>>)> {
    let keys = (0..20)
        .map(|s| format!("rec:{s}"))
        .chain((0..100).map(|s| format!("sp:{s}")))
        .chain((0..15).map(|s| format!("le:{s}")));
    keys.map(|k| {
        let v: Option<Vec<u8>> = d.cmd(&k, redis::cmd("GET").arg(&k));
        (k, v)
    })
    .collect()
}

#[test]
fn every_operation_runs_on_a_real_cluster() {
    let server = support::server();
    let cluster = support::cluster();
    everywhere::same_everywhere(&server, &cluster, |d| {
        let log = every_operation(d);
        let data = dump(d);
        assert!(data.iter().filter(|(_, v)| v.is_some()).count() > 20);
        (log, data)
    });
}

/// An add with a request id applies once per request, however often it is
/// sent; its request key lives in the shard's slot and expires.
fn add_once_applies_once_per_request(d: &mut Driver) {
    use redis_patterns::core::RequestId;
    let p = PackedRecords::new("once", Le::<u32>::new(), 100_000).unwrap();
    let all = IntField {
        offset: 0,
        size: 4,
        signed: false,
    };
    let first = RequestId::new("login-77").unwrap();
    for _ in 0..3 {
        assert_eq!(d.run(p.add_once(77, all, 2, &first)).unwrap(), 2);
    }
    assert_eq!(
        d.run(p.add_once(77, all, 2, &RequestId::random())).unwrap(),
        4
    );
    assert_eq!(d.run(p.add(77, all, 1)).unwrap(), 5);
    assert_eq!(d.run(p.get(77)).unwrap(), 5);
    // Refused input is refused with a request id too, and applies nothing.
    assert!(matches!(
        d.run(p.add_once(100_001, all, 1, &RequestId::random()))
            .map_err(Error::into_kind),
        Err(ErrorKind::IdOutOfRange { .. })
    ));
    let (shard, _) = p.locate(77).unwrap();
    let key = first.key_for(&shard).unwrap();
    let ttl: i64 = d.cmd(&key, redis::cmd("PTTL").arg(&key));
    assert!(ttl > 0, "{ttl}");
}

#[test]
fn add_once_applies_once_per_request_on_a_server_and_a_cluster() {
    support::on_server_and_cluster(add_once_applies_once_per_request);
}
