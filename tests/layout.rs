//! Layouts stored with the data (`layout.claim`, the sharded hash's and the
//! packed store's `<base>:meta`, a visit day's `:meta`, the rolling ring in
//! its index), against a real server and a real three-node cluster, every
//! body through both drivers: the first writer stores its layout, readers
//! find it, a writer with another layout is refused with nothing written.

mod support;

use chrono::{NaiveDate, Utc};
use redis_patterns::keys::Prefix;
use redis_patterns::layout::{self, Layout};
use redis_patterns::packed::{Bytes, Le, PackedLayout, PackedRecords};
use redis_patterns::rolling::{RingLayout, RollingStore};
use redis_patterns::sharded_hash::{ShardedHash, Sharding};
use redis_patterns::visits::VisitCounter;
use redis_patterns::{ErrorKind, Retention};
use support::Driver;

fn mismatch<T: std::fmt::Debug>(r: redis_patterns::Result<T>) -> (String, String) {
    match r.map_err(|e| e.into_kind()) {
        Err(ErrorKind::LayoutMismatch {
            stored, requested, ..
        }) => (stored, requested),
        other => panic!("expected LayoutMismatch, got {other:?}"),
    }
}

fn claim_and_read(d: &mut Driver) {
    let a = Layout::new("demo", 1).with("shards", 4);
    assert_eq!(d.run(layout::Layout::read("l:meta")).unwrap(), None);
    d.run(layout::Layout::claim("l:meta", &a)).unwrap();
    d.run(layout::Layout::claim("l:meta", &a)).unwrap();
    assert_eq!(
        d.run(layout::Layout::read("l:meta")).unwrap(),
        Some(a.clone())
    );
    let (stored, requested) = mismatch(d.run(layout::Layout::claim(
        "l:meta",
        &a.clone().with("shards", 5),
    )));
    assert_eq!(
        (stored.as_str(), requested.as_str()),
        ("shards=4, version=1", "shards=5, version=1")
    );
    assert_eq!(d.run(layout::Layout::read("l:meta")).unwrap(), Some(a));
}

#[test]
fn a_claim_stores_the_first_layout_and_refuses_another() {
    support::on_server_and_cluster(claim_and_read);
}

fn sharded_hash(d: &mut Driver) {
    let first = ShardedHash::builder("users", Sharding::Crc32 { shards: 16 })
        .record_layout(true)
        .build()
        .unwrap();
    assert_eq!(d.run(ShardedHash::stored_sharding("users")).unwrap(), None);
    assert!(matches!(
        d.run(ShardedHash::open("users")).map_err(|e| e.into_kind()),
        Err(ErrorKind::LayoutMissing { .. })
    ));
    assert_eq!(d.run(first.set("alice", "1")).unwrap(), Some(true));
    assert_eq!(
        d.run(ShardedHash::stored_sharding("users")).unwrap(),
        Some(Sharding::Crc32 { shards: 16 })
    );
    let opened = d.run(ShardedHash::open("users")).unwrap();
    assert_eq!(opened.shards(), 16);
    assert_eq!(
        d.run(opened.get::<String>("alice")).unwrap().as_deref(),
        Some("1")
    );
    // Another shard count: every write is refused before a shard is touched.
    let other = ShardedHash::builder("users", Sharding::Crc32 { shards: 3 })
        .record_layout(true)
        .build()
        .unwrap();
    let (stored, requested) = mismatch(d.run(other.set("bob", "2")));
    assert!(
        stored.contains("shards=16") && requested.contains("shards=3"),
        "{stored} / {requested}"
    );
    mismatch(d.run(other.import([("carol", "3")], Default::default())));
    mismatch(d.run(other.incr("n", 1)));
    assert_eq!(d.run(opened.len()).unwrap(), 1);
    // A hash that does not record its layout writes none.
    let plain = ShardedHash::new("plain", 4).unwrap();
    d.run(plain.set("a", "1")).unwrap();
    assert_eq!(d.run(ShardedHash::stored_sharding("plain")).unwrap(), None);
}

#[test]
fn a_sharded_hash_records_its_layout_and_refuses_another() {
    support::on_server_and_cluster(sharded_hash);
}

fn packed(d: &mut Driver) {
    let p = PackedRecords::builder("lv", Le::<u32>::new(), 9_999)
        .ids_per_shard(100)
        .record_layout(true)
        .build()
        .unwrap();
    d.run(p.set(42, &7)).unwrap();
    assert_eq!(
        d.run(PackedRecords::<Bytes>::stored_layout("lv")).unwrap(),
        Some(PackedLayout {
            width: 4,
            ids_per_shard: 100
        })
    );
    let opened = d
        .run(PackedRecords::open("lv", Le::<u32>::new(), 9_999))
        .unwrap();
    assert_eq!(opened.ids_per_shard(), 100);
    assert_eq!(d.run(opened.get(42)).unwrap(), 7);
    // Another width is refused when opening and when writing.
    mismatch(d.run(PackedRecords::open("lv", Le::<u16>::new(), 9_999)));
    let wide = PackedRecords::builder("lv", Le::<u64>::new(), 9_999)
        .record_layout(true)
        .build()
        .unwrap();
    mismatch(d.run(wide.set(1, &1)));
    mismatch(d.run(wide.add(
        1,
        redis_patterns::packed::IntField {
            offset: 0,
            size: 4,
            signed: false,
        },
        1,
    )));
    assert_eq!(d.run(opened.get(1)).unwrap(), 0);
}

#[test]
fn a_packed_store_records_its_layout_and_refuses_another() {
    support::on_server_and_cluster(packed);
}

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2099, 1, d).unwrap()
}

fn visits(d: &mut Driver) {
    let c = VisitCounter::builder("site", Utc, 8)
        .retention(Retention::Forever)
        .build()
        .unwrap();
    assert_eq!(d.run(c.stored_shards(day(1))).unwrap(), None);
    d.run(c.add(day(1), 1)).unwrap();
    d.run(c.add_batch(day(2), &[1, 2, 3])).unwrap();
    assert_eq!(d.run(c.stored_shards(day(1))).unwrap(), Some(8));
    assert_eq!(
        d.run(c.stored_shards_between(day(1), day(3))).unwrap(),
        Some(8)
    );
    // The script itself refuses another shard count, writing nothing.
    let other = c.with_shards(4).unwrap();
    let (stored, requested) = mismatch(d.run(other.add(day(1), 99)));
    assert_eq!(
        (stored.as_str(), requested.as_str()),
        ("shards=8", "shards=4")
    );
    mismatch(d.run(other.add_batch(day(2), &[98, 99])));
    mismatch(d.run(other.add_pipelined(day(2), &[97])));
    assert!(!d.run(c.contains(day(1), 99)).unwrap());
    assert_eq!(d.run(c.count(day(2))).unwrap(), 3);
    // Days with different layouts cannot be unioned shard by shard.
    d.run(other.add(day(3), 5)).unwrap();
    mismatch(d.run(c.stored_shards_between(day(1), day(3))));
    assert_eq!(d.run(c.distinct_between(day(1), day(2))).unwrap(), 3);
}

#[test]
fn a_visit_day_stores_its_shard_count_with_its_first_member() {
    support::on_server_and_cluster(visits);
}

fn rolling(d: &mut Driver) {
    let prefix = Prefix::new("rl:").unwrap();
    assert_eq!(
        d.run(RollingStore::stored_ring(&prefix, "m")).unwrap(),
        None
    );
    let store = RollingStore::builder(4, 2, std::time::Duration::from_secs(60))
        .prefix(prefix.clone())
        .build()
        .unwrap();
    for i in 0..5 {
        d.run(store.add("m", &format!("f{i}"), &i)).unwrap();
    }
    let ring = d
        .run(RollingStore::stored_ring(&prefix, "m"))
        .unwrap()
        .unwrap();
    assert_eq!(
        ring,
        RingLayout {
            shards: 3,
            shard_size: 2
        }
    );
    let reader = ring
        .store(prefix, std::time::Duration::from_secs(60))
        .unwrap();
    let recent: Vec<(String, i64)> = d.run(reader.recent("m", 2)).unwrap();
    assert_eq!(recent, [("f4".to_string(), 4), ("f3".to_string(), 3)]);
    assert_eq!(
        d.run(reader.len("m")).unwrap(),
        d.run(store.len("m")).unwrap()
    );
}

#[test]
fn a_rolling_reader_finds_the_ring_in_the_index() {
    support::on_server_and_cluster(rolling);
}
