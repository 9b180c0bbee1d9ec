//! The ACL rules of `docs/operations.md` are exactly enough: for each
//! pattern, a user made of the block's first line, the pattern's line (and on a cluster the
//! cluster line) runs every operation of the pattern, on one server and on
//! a cluster, through both drivers. Without `+config|get` the planners say
//! that they assumed the defaults; with the planners' line they read the
//! server's limits. After each pattern's tour the servers' `ACL LOG` holds
//! no denial for its user (a wait whose `SSUBSCRIBE` was refused would fall
//! back to sleeping without an error: the log still shows it).

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{NaiveDate, TimeZone, Utc};
use redis_patterns::analytics::{Analytics, Expr, Granularity, Period};
use redis_patterns::bloom::{Bloom, JsHashBloom};
use redis_patterns::core::{Durability, LimitsSource, RequestId};
use redis_patterns::lock::Lock;
use redis_patterns::login_log::{LoginLog, ReindexOptions};
use redis_patterns::packed::{IntField, Le, PackedRecords};
use redis_patterns::rate_limit::{self, Limit, RateLimiter};
use redis_patterns::rolling::RollingStore;
use redis_patterns::rwlock::RwLock;
use redis_patterns::semaphore::Semaphore;
use redis_patterns::sharded_hash::{ImportOptions, ShardedHash, Sharding};
use redis_patterns::signin::SignIn;
use redis_patterns::visits::VisitCounter;
use redis_patterns::{ErrorKind, Retention};
use support::Driver;

/// The ACL block of docs/operations.md: each group's lines, by the first word of the
/// comment above them (`every`, `cluster`, `lock` …).
fn rules() -> BTreeMap<String, Vec<String>> {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md"))
        .expect("docs/operations.md");
    let block = page
        .split("<!-- acl-rules -->\n```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n<!-- /acl-rules -->").next())
        .expect("docs/operations.md has the acl-rules markers");
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in block.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            current = comment
                .split([':', ' '])
                .next()
                .unwrap_or_default()
                .to_string();
        } else if line.starts_with("ACL SETUSER svc ") {
            groups
                .entry(current.clone())
                .or_default()
                .push(line.to_string());
        }
    }
    groups
}

/// Creates user `user` on `con` from the page's groups.
fn create_user(con: &mut redis::Connection, user: &str, groups: &[&str]) {
    let rules = rules();
    let _: () = redis::cmd("ACL")
        .arg("DELUSER")
        .arg(user)
        .query::<i64>(con)
        .map(drop)
        .unwrap();
    for g in groups {
        let lines = rules
            .get(*g)
            .unwrap_or_else(|| panic!("the acl-rules block has no `# {g}:` group"));
        for line in lines {
            let mut cmd = redis::cmd("ACL");
            for word in line.split_whitespace().skip(1) {
                cmd.arg(if word == "svc" { user } else { word });
            }
            let _: () = cmd.query(con).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
    }
}

/// The page's groups for `groups`, with the functions line when the tests
/// run in functions mode.
fn in_mode<'a>(groups: &[&'a str]) -> Vec<&'a str> {
    let mut out = groups.to_vec();
    if support::call_mode() == redis_patterns::CallMode::Functions {
        out.push("functions");
    }
    out
}

/// Asserts that no denial of `user` is in the server's `ACL LOG`, then
/// clears the log.
fn no_denials(con: &mut redis::Connection, user: &str, pattern: &str) {
    let log: Vec<std::collections::HashMap<String, redis::Value>> =
        redis::cmd("ACL").arg("LOG").query(con).expect("ACL LOG");
    let denied: Vec<String> = log
        .iter()
        .filter(|e| {
            matches!(e.get("username"), Some(redis::Value::BulkString(u)) if u == user.as_bytes())
        })
        .map(|e| {
            let field = |k: &str| match e.get(k) {
                Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                _ => String::new(),
            };
            format!("{} {}", field("reason"), field("object"))
        })
        // The planners' optional line: without it they assume the defaults
        // (checked below), so its denial is expected. redis-rs sends
        // CLIENT SETINFO when it connects and ignores a refusal; servers
        // that know the command (Redis 7.2+, Valkey) log it.
        .filter(|d| d != "command config|get" && d != "command client|setinfo")
        .collect();
    assert!(denied.is_empty(), "{pattern}: {user} was denied {denied:?}");
    let _: () = redis::cmd("ACL")
        .arg("LOG")
        .arg("RESET")
        .query(con)
        .unwrap();
}

fn url_of(port: u16, user: &str) -> String {
    format!("redis://{user}:secret@127.0.0.1:{port}/")
}

/// Every pattern with a group of its own (the layout's scripts are the
/// sharded hash's and the packed store's, in their groups).
const PATTERNS: [&str; 13] = [
    "expiring_map",
    "lock",
    "semaphore",
    "rwlock",
    "rate_limit",
    "visits",
    "sharded_hash",
    "packed",
    "bloom",
    "rolling",
    "login_log",
    "signin",
    "analytics",
];

#[test]
fn every_pattern_has_a_group_and_a_tour() {
    let groups: Vec<&str> = redis_patterns::acl::AclGroup::all()
        .iter()
        .map(|g| g.name)
        .collect();
    for c in redis_patterns::contract::PatternContract::all() {
        if c.name == "layout" {
            continue;
        }
        assert!(
            PATTERNS.contains(&c.name.as_str()),
            "no tour for {}",
            c.name
        );
        assert!(
            groups.contains(&c.name.as_str()),
            "no ACL group for {}",
            c.name
        );
    }
}

/// The groups of `pattern`'s user on the server behind `con`: the
/// expiring map's native line only where the server knows its commands.
fn groups_of(con: &mut redis::Connection, pattern: &'static str) -> Vec<&'static str> {
    let mut out = vec!["every", pattern];
    if pattern == "expiring_map" && has_field_ttl(con) {
        out.push("expiring_map_native");
    }
    out
}

fn has_field_ttl(con: &mut redis::Connection) -> bool {
    let info: Vec<redis::Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("HSETEX")
        .arg("HPEXPIRE")
        .query(con)
        .unwrap();
    info.iter().all(|v| !matches!(v, redis::Value::Nil))
}

/// Every operation of the expiring map on each path the server has.
fn expiring_map_tour(d: &mut Driver) {
    use redis_patterns::expiring_map::{ExpiringMap, Path};
    let caps = d.run(redis_patterns::core::Caps::read()).unwrap();
    let mut paths = vec![Path::Portable];
    if caps.hash_field_ttl && caps.hash_getex {
        paths.push(Path::Native);
        let (_, plan) = d.run(ExpiringMap::planned("sessions", 10_000)).unwrap();
        assert!(plan.path.native_bytes.is_some(), "{}", plan.path.reason);
    }
    for path in paths {
        let cap = if path == Path::Portable { 100 } else { 0 };
        let m = ExpiringMap::builder("sessions", 8)
            .path(path)
            .cap(cap)
            .max_idle(Some(Duration::from_secs(60)))
            .build()
            .unwrap();
        let ttl = Some(Duration::from_secs(600));
        assert!(d.run(m.put("a", "1", ttl)).unwrap().is_some());
        d.run(m.put_if_absent("b", "2", None)).unwrap();
        d.run(m.put_many(&[("c", "3"), ("d", "4")], ttl)).unwrap();
        d.run(m.put_if_absent_many(&[("e", "5")], ttl)).unwrap();
        assert_eq!(d.run(m.get::<String>("a")).unwrap().as_deref(), Some("1"));
        d.run(m.get_many::<String, _>(&["a", "zz"])).unwrap();
        d.run(m.ttl_of("a")).unwrap();
        d.run(m.persist("a")).unwrap();
        d.run(m.expire("a", Duration::from_secs(30))).unwrap();
        assert_eq!(d.run(m.remove("b")).unwrap(), Some(true));
        d.run(m.len()).unwrap();
        d.run(m.entries(0, 8)).unwrap();
        d.run(m.sweep(0, 8)).unwrap();
        d.run(m.inspect(8)).unwrap();
    }
    // The layout stored with the data: claimed by the first write, read
    // back by open.
    let recorded = ExpiringMap::builder("sessions:recorded", 4)
        .record_layout(true)
        .build()
        .unwrap();
    d.run(recorded.put("a", "1", None)).unwrap();
    let opened = d.run(ExpiringMap::open("sessions:recorded")).unwrap();
    assert_eq!(opened.shards(), 4);
    // A read without max-idle (HMGET and TIME, no script).
    let got: Option<String> = d.run(opened.get("a")).unwrap();
    assert_eq!(got.as_deref(), Some("1"));
}

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2099, 5, d).unwrap()
}

/// Every operation of `pattern`, as the restricted user behind `d`.
fn tour(pattern: &str, d: &mut Driver) {
    match pattern {
        "lock" => lock_tour(d),
        "semaphore" => semaphore_tour(d),
        "rwlock" => rwlock_tour(d),
        "rate_limit" => rate_limit_tour(d),
        "visits" => visits_tour(d),
        "expiring_map" => expiring_map_tour(d),
        "sharded_hash" => sharded_hash_tour(d),
        "packed" => packed_tour(d),
        "bloom" => bloom_tour(d),
        "rolling" => rolling_tour(d),
        "login_log" => login_log_tour(d),
        "signin" => signin_tour(d),
        "analytics" => analytics_tour(d),
        other => panic!("no tour for {other}"),
    }
}

/// A check that an operation of `pattern` succeeded as the restricted user.
fn as_user(pattern: &'static str) -> impl Fn(redis_patterns::Result<()>, &str) {
    move |r, what| r.unwrap_or_else(|e| panic!("{pattern} {what} as the restricted user: {e}"))
}

/// Every operation of the lock pattern, as the restricted user behind `d`.
fn lock_tour(d: &mut Driver) {
    let ok = as_user("lock");
    let lock = Lock::new("job", Duration::from_secs(30)).unwrap();
    let lease = d.run(lock.acquire(Duration::from_secs(1))).unwrap();
    assert!(d.run(lock.try_acquire()).unwrap_err().is_busy());
    // A waiter subscribes to the wake channel, then times out.
    assert!(matches!(
        d.run(lock.acquire(Duration::from_millis(50)))
            .map_err(|e| e.into_kind()),
        Err(ErrorKind::LockTimeout { .. })
    ));
    ok(d.run(lock.status()).map(drop), "status");
    assert!(d.run(lock.owned(&lease.token)).unwrap().is_some());
    assert!(
        d.run(lock.extend(&lease.token, Duration::from_secs(60)))
            .unwrap()
    );
    assert_eq!(d.run(lock.release(&lease.token)).unwrap(), Some(true));
}

/// Every operation of the semaphore pattern, as the restricted user behind `d`.
fn semaphore_tour(d: &mut Driver) {
    let sem = Semaphore::new("pool", 1, Duration::from_secs(30)).unwrap();
    let permit = d.run(sem.acquire(Duration::from_secs(1))).unwrap();
    assert!(d.run(sem.try_acquire()).unwrap_err().is_busy());
    assert!(d.run(sem.acquire(Duration::from_millis(50))).is_err());
    assert!(
        d.run(sem.extend(&permit.token, Duration::from_secs(60)))
            .unwrap()
    );
    assert_eq!(d.run(sem.release(&permit.token)).unwrap(), Some(true));
}

/// Every operation of the rwlock pattern, as the restricted user behind `d`.
fn rwlock_tour(d: &mut Driver) {
    let rw = RwLock::new("doc", Duration::from_secs(30)).unwrap();
    let reader = d.run(rw.read(Duration::from_secs(1))).unwrap();
    assert!(d.run(rw.try_write()).unwrap_err().is_busy());
    assert!(d.run(rw.write(Duration::from_millis(50))).is_err());
    assert!(d.run(rw.extend(&reader, Duration::from_secs(60))).unwrap());
    assert_eq!(d.run(rw.release(&reader)).unwrap(), Some(true));
    let writer = d.run(rw.write(Duration::from_secs(1))).unwrap();
    assert!(d.run(rw.extend(&writer, Duration::from_secs(60))).unwrap());
    assert_eq!(d.run(rw.release(&writer)).unwrap(), Some(true));
}

/// Every operation of the rate_limit pattern, as the restricted user behind `d`.
fn rate_limit_tour(d: &mut Driver) {
    for limit in [
        Limit::gcra(4, 10, Duration::from_secs(1)),
        Limit::sliding_counter(5, Duration::from_secs(1)),
        Limit::sliding_log(5, Duration::from_secs(1)),
    ] {
        let r = RateLimiter::new(limit).unwrap();
        assert!(!d.run(r.throttle("alice", 1)).unwrap().limited);
        assert_eq!(d.run(r.peek("alice")).unwrap().remaining, 4);
        assert_eq!(d.run(r.reset("alice")).unwrap(), Some(true));
    }
    let d1 = d.run(rate_limit::allow_once_per(
        "42:withdraw",
        Duration::from_secs(2),
    ));
    assert!(!d1.unwrap().limited);
}

/// Every operation of the visits pattern, as the restricted user behind `d`.
fn visits_tour(d: &mut Driver) {
    let ok = as_user("visits");
    let v = VisitCounter::new("site", Utc, 8).unwrap();
    ok(d.run(v.add(day(1), 1)).map(drop), "add");
    ok(d.run(v.add_batch(day(1), &[2, 3])).map(drop), "add_batch");
    ok(
        d.run(v.add_pipelined(day(2), &[4, 5])).map(drop),
        "add_pipelined",
    );
    assert_eq!(d.run(v.count(day(1))).unwrap(), 3);
    assert!(d.run(v.contains(day(1), 2)).unwrap());
    ok(d.run(v.shard_sizes(day(1))).map(drop), "shard_sizes");
    assert_eq!(d.run(v.distinct_between(day(1), day(2))).unwrap(), 5);
    assert!(matches!(
        d.run(v.final_count(day(1)))
            .map_err(redis_patterns::Error::into_kind),
        Err(ErrorKind::DayOpen { .. })
    ));
    let (_, plan) = d.run(VisitCounter::planned("site", Utc, 10_000)).unwrap();
    assert_eq!(plan.limits_source, LimitsSource::DefaultBecauseDenied);
}

/// Every operation of the sharded_hash pattern, as the restricted user behind `d`.
fn sharded_hash_tour(d: &mut Driver) {
    let ok = as_user("sharded_hash");
    let h = ShardedHash::new("users", 8).unwrap();
    assert_eq!(d.run(h.set("alice", "1")).unwrap(), Some(true));
    ok(
        d.run(h.set_many(&[("bob", "2"), ("carol", "3")])).map(drop),
        "set_many",
    );
    ok(
        d.run(h.set_if_absent("dave", "4")).map(drop),
        "set_if_absent",
    );
    ok(
        d.run(h.set_if_absent_many(&[("erin", "5")])).map(drop),
        "set_if_absent_many",
    );
    assert_eq!(
        d.run(h.get::<String>("alice")).unwrap().as_deref(),
        Some("1")
    );
    ok(
        d.run(h.get_many::<String, _>(&["alice", "zed"])).map(drop),
        "get_many",
    );
    assert!(d.run(h.exists("bob")).unwrap());
    assert_eq!(d.run(h.incr("n", 2)).unwrap(), 2);
    let req = RequestId::random();
    assert_eq!(d.run(h.incr_once("n", 2, &req)).unwrap(), 4);
    assert_eq!(d.run(h.incr_once("n", 2, &req)).unwrap(), 4);
    assert_eq!(d.run(h.delete("bob")).unwrap(), Some(true));
    ok(d.run(h.len()).map(drop), "len");
    ok(d.run(h.inspect(8)).map(drop), "inspect");
    let items = (0..20).map(|i| (format!("f{i}"), format!("v{i}")));
    ok(
        d.run(h.import(items, ImportOptions::default())).map(drop),
        "import",
    );
    // Not strict: plain HSET, HSETNX, HINCRBY (keys users:loose:<shard>).
    let loose = ShardedHash::builder("users:loose", Sharding::Crc32 { shards: 4 })
        .strict(false)
        .build()
        .unwrap();
    ok(d.run(loose.set("a", "1")).map(drop), "non-strict set");
    ok(
        d.run(loose.set_if_absent_many(&[("b", "2")])).map(drop),
        "non-strict HSETNX",
    );
    ok(d.run(loose.incr("c", 1)).map(drop), "non-strict HINCRBY");
    let (_, plan) = d.run(ShardedHash::planned("users", 10_000)).unwrap();
    assert_eq!(plan.limits_source, LimitsSource::DefaultBecauseDenied);
    // A hash that records its layout, and a reader that opens it.
    let claimed = ShardedHash::builder("users:claimed", Sharding::Crc32 { shards: 4 })
        .record_layout(true)
        .build()
        .unwrap();
    ok(d.run(claimed.set("a", "1")).map(drop), "set with a layout");
    ok(d.run(ShardedHash::open("users:claimed")).map(drop), "open");
}

/// Every operation of the packed pattern, as the restricted user behind `d`.
fn packed_tour(d: &mut Driver) {
    let ok = as_user("packed");
    let p = PackedRecords::new("logins", Le::<u32>::new(), 100_000).unwrap();
    let all = IntField {
        offset: 0,
        size: 4,
        signed: false,
    };
    ok(d.run(p.set(1, &7)), "set");
    ok(d.run(p.set_many(&[(2, 8), (70_000, 9)])), "set_many");
    assert_eq!(d.run(p.get(1)).unwrap(), 7);
    assert_eq!(d.run(p.get_many(&[2, 70_000])).unwrap(), [8, 9]);
    assert_eq!(d.run(p.add(1, all, 1)).unwrap(), 8);
    assert_eq!(
        d.run(p.add_once(1, all, 1, &RequestId::random())).unwrap(),
        9
    );
    assert!(d.run(p.compare_and_set(1, &9, &10)).unwrap().is_ok());
    // A store that records its layout, and a reader that opens it.
    let claimed = PackedRecords::builder("logins:claimed", Le::<u32>::new(), 1000)
        .record_layout(true)
        .build()
        .unwrap();
    ok(d.run(claimed.set(3, &1)), "set with a layout");
    ok(
        d.run(PackedRecords::open(
            "logins:claimed",
            Le::<u32>::new(),
            1000,
        ))
        .map(drop),
        "open",
    );
    assert_eq!(
        d.run(p.count_by(|n| (*n != 0).then_some(*n)))
            .unwrap()
            .len(),
        3
    );
}

/// Every operation of the bloom pattern, as the restricted user behind `d`.
fn bloom_tour(d: &mut Driver) {
    let ok = as_user("bloom");
    for spread in [false, true] {
        let name = format!("emails-{spread}");
        let bf = d
            .run(
                Bloom::builder(&name)
                    .expected(10_000)
                    .fp_rate(0.01)
                    .max_block_bytes(1024)
                    .spread_blocks(spread)
                    .create(),
            )
            .unwrap();
        assert_eq!(d.run(bf.add("a@example.com")).unwrap(), Some(true));
        ok(
            d.run(bf.multi_add(&["b@example.com", "c@example.com"]))
                .map(drop),
            "multi_add",
        );
        assert!(d.run(bf.exists("a@example.com")).unwrap());
        ok(
            d.run(bf.multi_exists(&["b@example.com", "z"])).map(drop),
            "multi_exists",
        );
        ok(d.run(bf.bits_set()).map(drop), "bits_set");
        ok(d.run(bf.approx_count()).map(drop), "approx_count");
        ok(d.run(bf.info()).map(drop), "info");
        let opened = d.run(Bloom::open(&name)).unwrap();
        let script = opened.with_engine(redis_patterns::bloom::Engine::Script);
        ok(d.run(script.add("d@example.com")).map(drop), "script add");
        ok(
            d.run(script.exists("d@example.com")).map(drop),
            "script exists",
        );
        ok(d.run(bf.clear()), "clear");
        ok(d.run(bf.destroy()), "destroy");
    }
    let php = JsHashBloom::new("bloom_user_email").unwrap();
    ok(
        d.run(php.add("carol@example.com")).map(drop),
        "JsHashBloom add",
    );
    assert!(d.run(php.exists("carol@example.com")).unwrap());
}

/// Every operation of the rolling pattern, as the restricted user behind `d`.
fn rolling_tour(d: &mut Driver) {
    let ok = as_user("rolling");
    let store = RollingStore::new(10, 4, Duration::from_secs(600)).unwrap();
    for i in 0..12 {
        ok(
            d.run(store.add("merchant:42", &format!("tx-{i}"), &i))
                .map(drop),
            "add",
        );
    }
    assert_eq!(
        d.run(store.get::<i32>("merchant:42", "tx-11")).unwrap(),
        Some(11)
    );
    assert_eq!(
        d.run(store.recent::<i32>("merchant:42", 3)).unwrap().len(),
        3
    );
    ok(d.run(store.len("merchant:42")).map(drop), "len");
    ok(d.run(store.clear("merchant:42")).map(drop), "clear");
}

/// Every operation of the login_log pattern, as the restricted user behind `d`.
fn login_log_tour(d: &mut Driver) {
    let ok = as_user("login_log");
    let log = LoginLog::builder()
        .retention(Retention::days(30))
        .build()
        .unwrap();
    assert_eq!(d.run(log.record("client", 7, day(3))).unwrap(), Some(true));
    ok(d.run(log.record("admin", 8, day(4))).map(drop), "record");
    assert!(d.run(log.logged_in_on("client", 7, day(3))).unwrap());
    assert!(d.run(log.logged_in_in_month("client", 7, 2099, 5)).unwrap());
    assert_eq!(d.run(log.days_in_month("client", 7, 2099, 5)).unwrap(), 1);
    assert!(
        d.run(log.logged_in_between("client", 7, day(1), day(9)))
            .unwrap()
    );
    assert_eq!(
        d.run(log.login_days("client", 7, day(1), day(9))).unwrap(),
        [day(3)]
    );
    assert_eq!(
        d.run(log.active_users("client", day(1), day(9))).unwrap(),
        [7]
    );
    assert_eq!(d.run(log.types_between(day(1), day(9))).unwrap().len(), 2);
    assert_eq!(
        d.run(log.all_active_users(day(1), day(9))).unwrap().len(),
        2
    );
    // Day indexes for logs written without them (SCAN, GETRANGE).
    let report = d
        .run(log.reindex(2099, 5, ReindexOptions::default()))
        .unwrap();
    assert_eq!(report.logs, 2);
}

/// Every operation of the signin pattern, as the restricted user behind `d`.
fn signin_tour(d: &mut Driver) {
    let ok = as_user("signin");
    for s in [
        SignIn::builder()
            .retention(Retention::days(30))
            .build()
            .unwrap(),
        SignIn::builder().tag("app").build().unwrap(),
    ] {
        assert_eq!(d.run(s.sign_in(100, day(1))).unwrap(), Some(true));
        ok(d.run(s.sign_in(100, day(2))).map(drop), "sign_in");
        ok(d.run(s.sign_in(101, day(2))).map(drop), "sign_in");
        assert!(d.run(s.signed_in(100, day(1))).unwrap());
        assert_eq!(d.run(s.count(day(2))).unwrap(), 2);
        assert_eq!(d.run(s.active_any(day(1), day(2))).unwrap().len(), 2);
        assert_eq!(d.run(s.active_every(day(1), day(2))).unwrap(), [100]);
        assert_eq!(d.run(s.count_any(day(1), day(2))).unwrap(), 2);
        assert_eq!(d.run(s.count_every(day(1), day(2))).unwrap(), 1);
        assert_eq!(
            d.run(s.days_signed_in(100, day(1), day(3))).unwrap().len(),
            2
        );
        ok(d.run(s.streak(100, day(1), day(3))).map(drop), "streak");
    }
}

/// Every operation of the analytics pattern, as the restricted user behind `d`.
fn analytics_tour(d: &mut Driver) {
    let ok = as_user("analytics");
    let at = Utc.with_ymd_and_hms(2099, 5, 1, 10, 0, 0).unwrap();
    for a in [
        Analytics::builder()
            .granularities(&Granularity::ALL)
            .retention(Granularity::Day, Retention::days(30))
            .build()
            .unwrap(),
        Analytics::builder().tag("app").build().unwrap(),
    ] {
        assert_eq!(d.run(a.mark("active", 1, &at)).unwrap(), Some(true));
        assert_eq!(
            d.run(a.mark_many("bought", &[(1, at), (2, at)])).unwrap(),
            Some(2)
        );
        ok(d.run(a.mark_unique("signup", 1)).map(drop), "mark_unique");
        assert_eq!(d.run(a.count("active", Period::Day(day(1)))).unwrap(), 1);
        assert!(d.run(a.contains("active", Period::Day(day(1)), 1)).unwrap());
        assert_eq!(d.run(a.count_unique("signup")).unwrap(), 1);
        let e = Expr::event("bought", Period::Day(day(1)))
            .and_not(Expr::event("active", Period::Day(day(1))));
        assert_eq!(d.run(a.query(e.clone()).count()).unwrap(), 1);
        assert!(d.run(a.query(e.clone()).contains(2)).unwrap());
        assert_eq!(d.run(a.query(e.clone()).members(0, 10)).unwrap().ids, [2]);
        let cached = a.query(e).cache("tour", Duration::from_secs(5));
        assert_eq!(d.run(cached.count()).unwrap(), 1);
        let t = d
            .run(a.cohort("active", "bought", Period::Day(day(1)), 2, 2))
            .unwrap();
        assert_eq!(t.sizes, [1, 0]);
    }
    let h = Analytics::builder().tag("hll").hll(true).build().unwrap();
    assert_eq!(d.run(h.mark("active", 1, &at)).unwrap(), Some(true));
    ok(
        d.run(h.mark_many("active", &[(2, at)])).map(drop),
        "mark_many with hll",
    );
    ok(
        d.run(h.mark_string("visit", "a@example.com", &at))
            .map(drop),
        "mark_string",
    );
    ok(
        d.run(h.mark_strings("visit", &[("b@example.com", at)]))
            .map(drop),
        "mark_strings",
    );
    let may = Period::Day(day(1));
    assert_eq!(d.run(h.count_uniques("active", may)).unwrap(), 2);
    assert_eq!(d.run(h.count_uniques_range("visit", may, may)).unwrap(), 2);
    ok(
        d.run(h.mark_unique("member", 1)).map(drop),
        "mark_unique with hll",
    );
    ok(
        d.run(h.mark_unique_string("email", "a@example.com"))
            .map(drop),
        "mark_unique_string",
    );
    ok(
        d.run(h.mark_unique_strings("email", &["b@example.com"]))
            .map(drop),
        "mark_unique_strings",
    );
    assert_eq!(d.run(h.count_unique_approx("member")).unwrap(), 1);
    assert_eq!(d.run(h.count_unique_approx("email")).unwrap(), 2);
    // Far ids: the cohort script pads a copy of the shorter bitmap (COPY)
    // and copies a window (GETRANGE / SETRANGE).
    let far = Analytics::builder().tag("far").build().unwrap();
    let next = at + chrono::TimeDelta::days(1);
    d.run(far.mark_many("c", &[(3, at), (40_000, at), (4, next)]))
        .unwrap();
    let r = [(3, at), (120_000, at), (3, next), (120_000, next)];
    d.run(far.mark_many("r", &r)).unwrap();
    let t = d.run(far.cohort("c", "r", may, 2, 1)).unwrap();
    assert_eq!(
        (t.sizes, t.counts),
        (vec![2, 1], vec![vec![Some(1)], vec![Some(0)]])
    );
}

#[test]
fn every_pattern_runs_as_a_user_with_only_the_readme_rules() {
    let server = support::server();
    for pattern in PATTERNS {
        let user = format!("svc-{pattern}");
        let groups = groups_of(&mut server.connection(), pattern);
        create_user(&mut server.connection(), &user, &in_mode(&groups));
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut server.connection())
            .unwrap();
        for mut d in support::drivers(&url_of(server.port(), &user)) {
            tour(pattern, &mut d);
            no_denials(&mut server.connection(), &user, pattern);
            let _: () = redis::cmd("FLUSHALL")
                .query(&mut server.connection())
                .unwrap();
        }
    }
}

#[test]
fn every_pattern_runs_as_that_user_on_a_cluster() {
    let cluster = support::cluster();
    for pattern in PATTERNS {
        let user = format!("svc-{pattern}");
        for node in cluster.nodes() {
            let mut groups = groups_of(&mut node.connection(), pattern);
            groups.insert(1, "cluster");
            create_user(&mut node.connection(), &user, &in_mode(&groups));
        }
        let url = url_of(cluster.nodes()[0].port(), &user);
        for mut d in support::drivers(&url) {
            for node in cluster.nodes() {
                let _: () = redis::cmd("FLUSHALL")
                    .query(&mut node.connection())
                    .unwrap();
            }
            tour(pattern, &mut d);
            for node in cluster.nodes() {
                no_denials(&mut node.connection(), &user, pattern);
            }
        }
    }
}

#[test]
fn the_optional_rules_add_what_they_say() {
    let server = support::server();
    let mut con = server.connection();
    // Planners: with +config|get they read the server's limits.
    create_user(
        &mut con,
        "svc-plan",
        &in_mode(&["every", "sharded_hash", "visits", "planners"]),
    );
    for mut d in support::drivers(&url_of(server.port(), "svc-plan")) {
        let (_, plan) = d.run(ShardedHash::planned("users", 10_000)).unwrap();
        assert_eq!(plan.limits_source, LimitsSource::Server);
        let (_, plan) = d.run(VisitCounter::planned("site", Utc, 10_000)).unwrap();
        assert_eq!(plan.limits_source, LimitsSource::Server);
    }
    // Durability: +wait is enough to wait (this server has no replica, so
    // the write is applied but not durable).
    create_user(
        &mut con,
        "svc-wait",
        &in_mode(&["every", "visits", "durability"]),
    );
    for d in support::drivers(&url_of(server.port(), "svc-wait")) {
        let v = VisitCounter::new("site", Utc, 8).unwrap();
        let durable = Durability::replicas(1, Duration::from_millis(10)).unwrap();
        let e = match d {
            Driver::Sync(mut c) => {
                c.set_durability(durable).unwrap();
                redis_patterns::Request::run(v.add(day(1), 1), &mut c).unwrap_err()
            }
            Driver::Async(mut c, rt) => {
                c.set_durability(durable).unwrap();
                rt.block_on(redis_patterns::Request::run_async(v.add(day(1), 1), &c))
                    .unwrap_err()
            }
        };
        assert!(
            matches!(
                e.kind(),
                ErrorKind::NotDurable {
                    acknowledged: 0,
                    wanted: 1,
                    ..
                }
            ),
            "{e}"
        );
    }
}
