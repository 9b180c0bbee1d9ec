//! Expiring maps against a real server: the same cases on both paths (the
//! native one where the server has per-field TTLs), through both drivers,
//! on a server and a cluster; expiry under concurrent readers and writers;
//! max-idle; the size cap; refusals before anything is written.
//!
//! Leases are short (200 ms) so that the tests stay fast; what is asserted
//! is only what the semantics bound: an entry read before its expiry is
//! returned, an entry past its expiry never is.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_patterns::core::Caps;
use redis_patterns::expiring_map::{ExpiringMap, Path, Ttl};
use redis_patterns::sharded_hash::ListpackLimits;
use redis_patterns::{ErrorKind, Request};
use support::Driver;

const LEASE: Duration = Duration::from_millis(200);

/// The paths this driver's server can run: portable, and native where it
/// has per-field TTLs.
fn paths(d: &mut Driver) -> Vec<Path> {
    let caps = d.run(Caps::read()).unwrap();
    let mut out = vec![Path::Portable];
    if caps.hash_field_ttl && caps.hash_getex {
        out.push(Path::Native);
    }
    out
}

/// Runs `body` through the sync driver on a fresh server, once for each
/// of its [`paths`]; `body` also gets the server's URL (for the clients it
/// starts).
fn on_each_path_sync(body: impl Fn(&mut Driver, &str, Path)) {
    support::on_server_at(|d, url| {
        if d.name() != "sync" {
            return;
        }
        for path in paths(d) {
            body(d, url, path);
        }
    });
}

fn map(base: &str, shards: u32, path: Path) -> ExpiringMap {
    ExpiringMap::builder(base, shards)
        .path(path)
        .build()
        .unwrap()
}

fn get(d: &mut Driver, m: &ExpiringMap, field: &str) -> Option<String> {
    d.run(m.get::<String>(field)).unwrap()
}

fn basic(d: &mut Driver) {
    for path in paths(d) {
        let m = map(&format!("em:{}", path.name()), 8, path);
        let hour = Some(Duration::from_secs(3600));
        assert_eq!(d.run(m.put("a", "1", hour)).unwrap(), Some(true));
        assert_eq!(d.run(m.put("a", "2", hour)).unwrap(), Some(false));
        assert_eq!(get(d, &m, "a").as_deref(), Some("2"));
        assert_eq!(d.run(m.put_if_absent("a", "3", hour)).unwrap(), Some(false));
        assert_eq!(d.run(m.put_if_absent("b", "b", None)).unwrap(), Some(true));
        assert_eq!(get(d, &m, "a").as_deref(), Some("2"));
        match d.run(m.ttl_of("a")).unwrap() {
            Ttl::Expires(left) => {
                assert!(left <= Duration::from_secs(3600) && left > Duration::ZERO)
            }
            other => panic!("{path:?}: ttl of a: {other:?}"),
        }
        assert_eq!(d.run(m.ttl_of("b")).unwrap(), Ttl::Persistent);
        assert_eq!(d.run(m.ttl_of("zz")).unwrap(), Ttl::Missing);
        assert_eq!(d.run(m.persist("a")).unwrap(), Some(true));
        assert_eq!(d.run(m.persist("a")).unwrap(), Some(false));
        assert_eq!(d.run(m.persist("zz")).unwrap(), None);
        assert_eq!(d.run(m.ttl_of("a")).unwrap(), Ttl::Persistent);
        assert!(d.run(m.expire("a", Duration::from_secs(60))).unwrap());
        assert!(!d.run(m.expire("zz", Duration::from_secs(60))).unwrap());
        let pairs: Vec<(String, String)> = (0..40)
            .map(|i| (format!("k{i}"), format!("v{i}")))
            .collect();
        let r = d.run(m.put_many(&pairs, hour)).unwrap();
        assert_eq!((r.new, r.evicted), (Some(40), 0));
        let r = d.run(m.put_if_absent_many(&pairs[..10], hour)).unwrap();
        assert_eq!(r.new, Some(0));
        let got: Vec<Option<String>> = d.run(m.get_many(&["k3", "nope", "a", "k39"])).unwrap();
        assert_eq!(
            got,
            [
                Some("v3".into()),
                None,
                Some("2".into()),
                Some("v39".into())
            ]
        );
        assert_eq!(d.run(m.len()).unwrap(), 42);
        assert_eq!(d.run(m.remove("k3")).unwrap(), Some(true));
        assert_eq!(d.run(m.remove("k3")).unwrap(), Some(false));
        let mut all = Vec::new();
        let mut from = Some(0);
        while let Some(f) = from {
            let page = d.run(m.entries(f, 3)).unwrap();
            all.extend(page.entries);
            from = page.next;
        }
        assert_eq!(all.len(), 41, "{path:?}");
        let b = all.iter().find(|e| e.field == b"b").unwrap();
        assert_eq!((b.value.as_slice(), b.expires_at_ms), (&b"b"[..], None));
        assert!(
            all.iter()
                .find(|e| e.field == b"k0")
                .unwrap()
                .expires_at_ms
                .is_some()
        );
        let health = d.run(m.inspect(8)).unwrap();
        if path == Path::Portable {
            assert_eq!(health.converted, 0);
        }
    }
}

#[test]
fn the_same_cases_pass_on_every_path_on_a_server_and_a_cluster() {
    support::on_server_and_cluster(basic);
}

#[test]
fn an_expired_entry_is_never_returned_and_the_sweep_removes_it() {
    support::on_server_with_connection(|d, con| {
        for path in paths(d) {
            let m = map(&format!("ex:{}", path.name()), 4, path);
            let pairs: Vec<(String, String)> =
                (0..60).map(|i| (format!("t{i}"), "x".into())).collect();
            let start = Instant::now();
            d.run(m.put_many(&pairs, Some(LEASE))).unwrap();
            d.run(m.put("keep", "k", None)).unwrap();
            std::thread::sleep(LEASE + Duration::from_millis(50));
            assert!(start.elapsed() > LEASE);
            let fields: Vec<&str> = pairs.iter().map(|(f, _)| f.as_str()).collect();
            let got: Vec<Option<String>> = d.run(m.get_many(&fields)).unwrap();
            assert!(got.iter().all(Option::is_none), "{path:?}: {got:?}");
            assert_eq!(d.run(m.ttl_of("t1")).unwrap(), Ttl::Missing);
            assert_eq!(d.run(m.persist("t1")).unwrap(), None);
            assert_eq!(
                d.run(m.put_if_absent("t2", "again", None)).unwrap(),
                Some(true)
            );
            let (mut removed, mut live, mut from) = (0, 0, Some(0));
            while let Some(f) = from {
                let r = d.run(m.sweep(f, 3)).unwrap();
                (removed, live, from) = (removed + r.removed, live + r.live, r.next);
            }
            assert_eq!(live, 2, "{path:?}");
            if path == Path::Portable {
                assert_eq!(removed, 59);
                let raw: u64 = (0..4)
                    .map(|s| {
                        redis::cmd("HLEN")
                            .arg(m.key_of_shard(s))
                            .query::<u64>(con)
                            .unwrap()
                    })
                    .sum();
                assert_eq!(raw, 2, "the sweep leaves no expired entry");
            }
            assert_eq!(d.run(m.entries(0, 4)).unwrap().entries.len(), 2);
        }
    });
}

/// The servers keep expiries in whole milliseconds, and a native field is
/// live through its last millisecond (Redis 8.2: expired when now > at).
const CLOCK: Duration = Duration::from_millis(2);

/// What the writers wrote: (field, version) -> when the write returned.
type Written = Arc<Mutex<HashMap<(u32, u32), Instant>>>;

fn writer(url: &str, m: ExpiringMap, id: u32, written: Written, until: Instant) {
    let mut con = support::connect(url);
    let mut version = 0;
    while Instant::now() < until {
        let field = (version * 7 + id) % 50;
        let value = format!("{field}:{version}:{id}");
        m.put(
            format!("f{field}"),
            &value,
            Some(Duration::from_millis(60 + (version as u64 % 5) * 20)),
        )
        .run(&mut con)
        .unwrap();
        written
            .lock()
            .unwrap()
            .insert((field, version * 10 + id), Instant::now());
        version += 1;
    }
}

/// Reads every field until `until`; panics on a value read after its
/// expiry: one whose write returned more than its TTL (and the servers'
/// millisecond clock, [`CLOCK`]) before the read began.
fn reader(url: &str, m: ExpiringMap, written: Written, until: Instant) -> u64 {
    let mut con = support::connect(url);
    let fields: Vec<String> = (0..50).map(|i| format!("f{i}")).collect();
    let mut seen = 0;
    while Instant::now() < until {
        let began = Instant::now();
        let got: Vec<Option<String>> = m.get_many(&fields).run(&mut con).unwrap();
        for v in got.into_iter().flatten() {
            let parts: Vec<u32> = v.split(':').map(|p| p.parse().unwrap()).collect();
            let (field, version, id) = (parts[0], parts[1], parts[2]);
            let ttl = Duration::from_millis(60 + (version as u64 % 5) * 20);
            if let Some(&returned) = written.lock().unwrap().get(&(field, version * 10 + id)) {
                assert!(
                    began < returned + ttl + CLOCK,
                    "{:?}: an expired entry was returned: {v}, {:?} after its write returned (ttl {ttl:?})",
                    m.path(),
                    began - returned
                );
            }
            seen += 1;
        }
    }
    seen
}

#[test]
fn concurrent_readers_and_writers_never_see_an_expired_entry() {
    on_each_path_sync(|d, url, path| {
        let m = map(&format!("cc:{}", path.name()), 4, path);
        let written: Written = Arc::default();
        let until = Instant::now() + Duration::from_millis(800);
        let mut threads = Vec::new();
        for id in 0..2 {
            let (m, w, url) = (m.clone(), written.clone(), url.to_string());
            threads.push(std::thread::spawn(move || {
                writer(&url, m, id, w, until);
                0
            }));
        }
        for _ in 0..2 {
            let (m, w, url) = (m.clone(), written.clone(), url.to_string());
            threads.push(std::thread::spawn(move || reader(&url, m, w, until)));
        }
        let seen: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(seen > 0, "{path:?}: the readers saw no live entry");
        std::thread::sleep(Duration::from_millis(200));
        let r = d.run(m.sweep(0, 4)).unwrap();
        assert_eq!(r.live, 0, "{path:?}");
        assert!(d.run(m.entries(0, 4)).unwrap().entries.is_empty());
        if path == Path::Portable {
            assert_eq!(
                d.run(m.len()).unwrap(),
                0,
                "the sweep leaves no expired entry"
            );
        }
    });
}

#[test]
fn an_entry_read_every_half_lease_survives_ten_leases_and_an_unread_one_expires() {
    on_each_path_sync(|d, _, path| {
        let m = ExpiringMap::builder(&format!("idle:{}", path.name()), 2)
            .path(path)
            .max_idle(Some(LEASE))
            .build()
            .unwrap();
        d.run(m.put("read", "r", Some(LEASE))).unwrap();
        d.run(m.put("unread", "u", Some(LEASE))).unwrap();
        let unread_written = Instant::now();
        let (start, mut checked) = (Instant::now(), 0);
        let (mut last, mut unread_gone) = (Instant::now(), None);
        while start.elapsed() < LEASE * 10 {
            std::thread::sleep(LEASE / 2);
            let began = Instant::now();
            if unread_gone.is_none() && began > unread_written + LEASE + CLOCK {
                // The first look past its lease: it is no longer read,
                // and the sweep that follows removes it.
                assert_eq!(get(d, &m, "unread"), None, "{path:?}");
                let swept = d.run(m.sweep(0, 2)).unwrap();
                if path == Path::Portable {
                    assert_eq!((swept.removed, swept.live), (1, 1), "{path:?}");
                }
                assert_eq!(d.run(m.entries(0, 2)).unwrap().entries.len(), 1);
                unread_gone = Some(unread_written.elapsed());
            }
            let got = get(d, &m, "read");
            // The last read pushed the expiry to a lease after it began:
            // a read that is answered within that lease ran within it
            // (one that only began within it may reach the server after
            // it, on a loaded machine) and must find the entry.
            if Instant::now() < last + LEASE {
                assert_eq!(
                    got.as_deref(),
                    Some("r"),
                    "{path:?} after {:?}",
                    start.elapsed()
                );
                checked += 1;
            } else if got.is_none() {
                d.run(m.put("read", "r", Some(LEASE))).unwrap();
            }
            last = began;
        }
        assert!(
            checked >= 10,
            "{path:?}: only {checked} reads came within a lease"
        );
        // Never read: gone at the first look past its lease (within a
        // lease and a half, the loop's sweep interval being half a
        // lease, unless the machine stalls), swept then.
        let gone = unread_gone.expect("the unread entry was looked at past its lease");
        println!("{path:?}: the unread entry was gone and swept {gone:?} after its write");
        assert_eq!(get(d, &m, "unread"), None);
        assert_eq!(d.run(m.entries(0, 2)).unwrap().entries.len(), 1);
    });
}

/// The stored bytes of `field` in its shard (portable: the expiry, then the value).
fn stored(con: &mut redis::Connection, m: &ExpiringMap, field: &str) -> Vec<u8> {
    redis::cmd("HGET")
        .arg(m.shard_key(field.as_bytes()))
        .arg(field)
        .query(con)
        .unwrap()
}

#[test]
fn a_portable_max_idle_read_writes_only_an_entry_with_less_than_fifteen_sixteenths_left() {
    support::on_server_with_connection(|d, con| {
        let hour = Duration::from_secs(3600);
        let m = ExpiringMap::builder("idle16", 2)
            .max_idle(Some(hour))
            .build()
            .unwrap();
        // An hour left: a read within a sixteenth of an hour (225 s) of the
        // write leaves the entry's bytes as they are.
        d.run(m.put("full", "f", Some(hour))).unwrap();
        let before = stored(con, &m, "full");
        for _ in 0..3 {
            assert_eq!(get(d, &m, "full").as_deref(), Some("f"));
        }
        assert_eq!(
            stored(con, &m, "full"),
            before,
            "a read wrote an entry not due"
        );
        // Ten minutes left (less than 15/16 of an hour): one read pushes it
        // to an hour from the read, and the next one writes nothing.
        d.run(m.put("short", "s", Some(Duration::from_secs(600))))
            .unwrap();
        let pushed = |d: &mut Driver| match d.run(m.ttl_of("short")).unwrap() {
            Ttl::Expires(left) => left,
            other => panic!("ttl of short: {other:?}"),
        };
        assert!(pushed(d) <= Duration::from_secs(600));
        let batch = d
            .run(m.get_many::<String, _>(&["short", "full", "none"]))
            .unwrap();
        assert_eq!(
            batch,
            vec![Some("s".to_string()), Some("f".to_string()), None]
        );
        assert!(pushed(d) > Duration::from_secs(600), "the read pushed it");
        let after = stored(con, &m, "short");
        assert_eq!(get(d, &m, "short").as_deref(), Some("s"));
        assert_eq!(stored(con, &m, "short"), after);
        assert_eq!(stored(con, &m, "full"), before);
    });
}

#[test]
fn the_cap_evicts_the_entries_nearest_their_expiry_inside_the_write() {
    support::on_server(|d| {
        for path in paths(d) {
            let m = ExpiringMap::builder(&format!("cap:{}", path.name()), 1)
                .path(path)
                .cap(5)
                .build()
                .unwrap();
            for i in 1..=5u64 {
                d.run(m.put(format!("e{i}"), "v", Some(Duration::from_secs(100 * i))))
                    .unwrap();
            }
            d.run(m.put("forever", "v", None)).unwrap();
            assert_eq!(d.run(m.len()).unwrap(), 5, "{path:?}");
            assert_eq!(
                get(d, &m, "e1"),
                None,
                "{path:?}: the nearest expiry goes first"
            );
            let r = d
                .run(m.put_many(&[("n1", "v"), ("n2", "v")], Some(Duration::from_secs(1))))
                .unwrap();
            assert_eq!((r.new, r.evicted), (Some(2), 2), "{path:?}");
            // Overwriting a kept entry is no new one and evicts nothing.
            let r = d
                .run(m.put_many(&[("n1", "w"), ("n1", "x")], None))
                .unwrap();
            assert_eq!((r.new, r.evicted), (Some(0), 0), "{path:?}");
            let got: Vec<Option<String>> = d
                .run(m.get_many(&["e2", "e3", "e4", "e5", "forever", "n1", "n2"]))
                .unwrap();
            let kept: Vec<bool> = got.iter().map(Option::is_some).collect();
            assert_eq!(
                kept,
                [false, false, true, true, true, true, true],
                "{path:?}"
            );
            assert_eq!(got[5].as_deref(), Some("x"), "{path:?}: the last pair wins");
        }
    });
}

#[test]
fn a_shard_past_its_entry_limit_refuses_the_write_and_counts_new_entries_exactly() {
    support::on_server_with_connection(|d, con| {
        for path in paths(d) {
            let m = ExpiringMap::builder(&format!("full:{}", path.name()), 1)
                .path(path)
                .limits(ListpackLimits {
                    entries: 4,
                    value: 64,
                })
                .build()
                .unwrap();
            let r = d
                .run(m.put_many(&[("a", "1"), ("b", "2"), ("a", "3")], None))
                .unwrap();
            assert_eq!(
                r.new,
                Some(2),
                "{path:?}: a repeated field is one new entry"
            );
            d.run(m.put_many(&[("s1", "x"), ("s2", "x")], Some(LEASE / 4)))
                .unwrap();
            let five = [("c", "1"), ("d", "1"), ("e", "1")];
            let e = d.run(m.put_many(&five, None)).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::ShardFull { .. }),
                "{path:?}: {e}"
            );
            let got: Vec<Option<String>> = d.run(m.get_many(&["c", "d", "e"])).unwrap();
            assert!(
                got.iter().all(Option::is_none),
                "{path:?}: refused, nothing written"
            );
            // Once the short entries have expired they make room.
            std::thread::sleep(LEASE / 4 + CLOCK + Duration::from_millis(20));
            let e = d.run(m.put_many(&five, None)).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::ShardFull { .. }),
                "{path:?}: {e}"
            );
            let r = d.run(m.put_many(&five[..2], None)).unwrap();
            assert_eq!(r.new, Some(2), "{path:?}");
            let raw: u64 = redis::cmd("HLEN")
                .arg(m.key_of_shard(0))
                .query(con)
                .unwrap();
            if path == Path::Portable {
                assert_eq!(raw, 4, "the write removed the expired entries first");
            }
            assert_eq!(d.run(m.entries(0, 1)).unwrap().entries.len(), 4, "{path:?}");
        }
    });
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    support::on_server_with_connection(|d, con| {
        let m = ExpiringMap::new("bad", 4).unwrap();
        let long = "x".repeat(59);
        let e = d.run(m.put("f", &long, None)).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::ListpackValueTooLong { .. }),
            "{e}"
        );
        assert!(d.run(m.put("f", &long[..58], None)).is_ok());
        let _: () = redis::cmd("FLUSHALL").query(con).unwrap();
        let e = d
            .run(m.put("f", "v", Some(Duration::from_micros(10))))
            .unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::InvalidArgument { .. }), "{e}");
        let e = d
            .run(m.put_many(&[("a", "1"), ("b", long.as_str())], None))
            .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::ListpackValueTooLong { .. }),
            "{e}"
        );
        assert!(d.run(m.put_many::<&str, &str>(&[], None)).is_err());
        assert!(d.run(m.sweep(4, 1)).is_err());
        assert!(d.run(m.sweep(0, 0)).is_err());
        assert!(ExpiringMap::builder("x", 0).build().is_err());
        assert!(ExpiringMap::builder("", 1).build().is_err());
        assert!(
            ExpiringMap::builder("x", 1)
                .max_idle(Some(Duration::ZERO))
                .build()
                .is_err()
        );
        if !paths(d).contains(&Path::Native) {
            let n = map("native", 4, Path::Native);
            let e = d.run(n.put("f", "v", None)).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::InvalidArgument { .. }), "{e}");
        }
        assert_eq!(support::dbsize(con), 0);
    });
}

#[test]
fn the_planner_says_which_path_it_chose_and_why() {
    support::on_server_with_connection(|d, con| {
        let (m, plan) = d.run(ExpiringMap::planned("plan", 100_000)).unwrap();
        assert_eq!(m.shards(), plan.plan.shards as u64);
        assert_eq!(m.path(), plan.path.path);
        assert!(!plan.path.reason.is_empty());
        if paths(d).contains(&Path::Native) {
            let (p, n) = (
                plan.path.portable_bytes.unwrap(),
                plan.path.native_bytes.unwrap(),
            );
            let listpack = plan
                .path
                .native_encoding
                .as_deref()
                .unwrap()
                .starts_with("listpack");
            assert_eq!(
                m.path() == Path::Native,
                listpack && n <= p,
                "{}",
                plan.path.reason
            );
        } else {
            assert_eq!(m.path(), Path::Portable);
            assert!(plan.path.portable_bytes.is_none());
        }
        assert_eq!(support::dbsize(con), 0, "the probe is deleted");
        // A map of the plan writes and reads on its path.
        d.run(m.put("x", "1", Some(Duration::from_secs(60))))
            .unwrap();
        assert_eq!(get(d, &m, "x").as_deref(), Some("1"));
    });
}

#[test]
fn the_path_is_stored_with_the_data_and_a_reader_elsewhere_picks_it() {
    support::on_server_and_cluster(|d| {
        for path in paths(d) {
            let base = format!("stored:{}", path.name());
            let writer = ExpiringMap::builder(&base, 8)
                .path(path)
                .record_layout(true)
                .build()
                .unwrap();
            d.run(writer.put("a", "1", Some(Duration::from_secs(60))))
                .unwrap();
            // A reader told nothing but the name finds the shards and path.
            let opened = d.run(ExpiringMap::open(&base)).unwrap();
            assert_eq!((opened.shards(), opened.path()), (8, path));
            assert_eq!(get(d, &opened, "a").as_deref(), Some("1"));
            // The planner, on any server, takes the stored layout over its
            // own choice, and says so.
            let (planned, plan) = d.run(ExpiringMap::planned(&base, 1_000_000)).unwrap();
            assert_eq!((planned.shards(), planned.path()), (8, path));
            assert_eq!(plan.plan.shards, 8);
            assert!(
                plan.path.reason.contains("stored with the data"),
                "{}",
                plan.path.reason
            );
            assert!(plan.path.native_bytes.is_none());
            // A writer on the other path (or another shard count) is
            // refused before it writes anything.
            let other = match path {
                Path::Portable => Path::Native,
                Path::Native => Path::Portable,
            };
            for (shards, p) in [(8, other), (9, path)] {
                let wrong = ExpiringMap::builder(&base, shards)
                    .path(p)
                    .record_layout(true)
                    .build()
                    .unwrap();
                let e = d.run(wrong.put("b", "2", None)).unwrap_err();
                if paths(d).contains(&p) {
                    assert!(matches!(e.kind(), ErrorKind::LayoutMismatch { .. }), "{e}");
                    assert_eq!(get(d, &wrong, "b"), None, "{e}");
                }
            }
        }
        let e = d.run(ExpiringMap::open("nothing:here")).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::LayoutMissing { .. }), "{e}");
    });
}

/// The reason the manifest gives for the native path's refusal (its
/// `native_refusal` constant, which every client raises).
fn native_refusal() -> String {
    let manifest = serde_json::to_value(redis_patterns::manifest::Manifest::bundled()).unwrap();
    let of = |list: &serde_json::Value, name: &str| {
        list.as_array()
            .and_then(|all| all.iter().find(|x| x["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("the manifest's {name}"))
    };
    let pattern = of(&manifest["patterns"], "expiring_map");
    of(&pattern["constants"], "native_refusal")["value"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_native_path_is_refused_before_anything_is_sent_on_a_server_without_field_ttls() {
    support::on_server_with_connection(|d, con| {
        if paths(d).contains(&Path::Native) {
            return;
        }
        let reason = native_refusal();
        let refused = |e: redis_patterns::Error, what: &str| match e.kind() {
            ErrorKind::InvalidArgument {
                script: None,
                name,
                reason: why,
            } => {
                assert_eq!(
                    (name.as_str(), why.as_str()),
                    ("path", reason.as_str()),
                    "{what}"
                );
            }
            _ => panic!("{what}: {e}"),
        };
        for record in [false, true] {
            let m = ExpiringMap::builder("refused", 4)
                .path(Path::Native)
                .cap(3)
                .max_idle(Some(LEASE))
                .record_layout(record)
                .build()
                .unwrap();
            let hour = Some(Duration::from_secs(3600));
            refused(d.run(m.put("f", "v", hour)).unwrap_err(), "put");
            refused(
                d.run(m.put_if_absent("f", "v", None)).unwrap_err(),
                "put_if_absent",
            );
            refused(
                d.run(m.put_many(&[("a", "1"), ("b", "2")], hour))
                    .unwrap_err(),
                "put_many",
            );
            refused(d.run(m.get::<String>("f")).unwrap_err(), "get");
            refused(
                d.run(m.get_many::<String, _>(&["a", "b"])).unwrap_err(),
                "get_many",
            );
            refused(d.run(m.remove("f")).unwrap_err(), "remove");
            refused(d.run(m.ttl_of("f")).unwrap_err(), "ttl_of");
            refused(d.run(m.persist("f")).unwrap_err(), "persist");
            refused(d.run(m.expire("f", LEASE)).unwrap_err(), "expire");
            refused(d.run(m.sweep(0, 4)).unwrap_err(), "sweep");
            refused(d.run(m.entries(0, 4)).unwrap_err(), "entries");
            assert_eq!(support::dbsize(con), 0, "a refused call wrote nothing");
        }
        // The same data on the portable path works on the same server.
        let portable = map("refused", 4, Path::Portable);
        assert_eq!(d.run(portable.put("f", "v", None)).unwrap(), Some(true));
    });
}
