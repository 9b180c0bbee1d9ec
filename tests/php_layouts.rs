//! Data written by the PHP recipes' own code, run by real `php`
//! (`tests/data/php_layouts.php`, its functions copied from the source
//! documents), read through the crate's high-level API as it lies: the
//! login log `loginLog_2017-10_client_1001` (and, after `reindex`, in
//! queries (6) and (7)), the bare-date sign-in bitmaps (`SETBIT 20220320
//! 100 1`, with `Prefix::none()`), the sharded hash's `base_<shard>` keys
//! (the `_` separator) and the `BloomFilter::JSHash` bitmap
//! `bloom_user_email` — and what the API writes is where the PHP code reads
//! it. Every body runs through both drivers.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use chrono::NaiveDate;
use redis_patterns::bloom::JsHashBloom;
use redis_patterns::keys::Prefix;
use redis_patterns::login_log::{ActiveUser, LoginLog, ReindexOptions};
use redis_patterns::sharded_hash::{ShardedHash, Sharding};
use redis_patterns::signin::SignIn;
use redis_patterns_test_support::LocalServer;
use serde_json::Value;
use support::Driver;

/// Runs the PHP file against `server` in `mode`; its JSON output.
fn php(server: &LocalServer, mode: &str) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/php_layouts.php");
    let out = support::stdout_of(
        Command::new("php")
            .arg(&file)
            .arg(server.port().to_string())
            .arg(mode),
        &format!("php {mode}"),
    );
    serde_json::from_str(&out).expect("the PHP file prints JSON")
}

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).expect("a date")
}

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").expect("a Y-m-d date")
}

fn bare_date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y%m%d").expect("a Ymd date")
}

fn read_login_log(d: &mut Driver, wrote: &Value) {
    let log = LoginLog::default();
    let logins: Vec<(String, u64, NaiveDate)> = wrote["logins"]
        .as_array()
        .expect("logins")
        .iter()
        .map(|l| {
            (
                l[0].as_str().expect("type").to_string(),
                l[1].as_u64().expect("uid"),
                date(l[2].as_str().expect("date")),
            )
        })
        .collect();
    // The key the recipe documents.
    assert_eq!(
        log.log_key("client", 1001, day(2017, 10, 25)),
        "loginLog_2017-10_client_1001"
    );
    // Queries (2)-(5) read the logs as they are.
    for (t, uid, at) in &logins {
        assert!(
            d.run(log.logged_in_on(t, *uid, *at)).unwrap(),
            "{t} {uid} {at}"
        );
    }
    assert!(
        !d.run(log.logged_in_on("client", 1001, day(2017, 10, 24)))
            .unwrap()
    );
    assert_eq!(
        d.run(log.days_in_month("client", 1001, 2017, 10)).unwrap(),
        2
    );
    assert_eq!(
        d.run(log.login_days("client", 1001, day(2017, 9, 1), day(2017, 10, 31)))
            .unwrap(),
        [day(2017, 9, 30), day(2017, 10, 25), day(2017, 10, 26)]
    );
    let between = log.logged_in_between("client", 1002, day(2017, 10, 2), day(2017, 10, 30));
    assert!(
        !d.run(between).unwrap(),
        "1002 logged in on the 1st and the 31st only"
    );
    // Queries (6) and (7) read day indexes the PHP code never wrote...
    let (from, to) = (day(2017, 9, 1), day(2017, 10, 31));
    assert!(d.run(log.all_active_users(from, to)).unwrap().is_empty());
    // ... until a reindex of each month builds them from the logs.
    for (y, m) in [(2017, 9), (2017, 10)] {
        let r = d.run(log.reindex(y, m, ReindexOptions::default())).unwrap();
        assert!(r.cursor.is_done());
        assert_eq!(r.skipped, 0, "{y}-{m}");
    }
    assert_eq!(
        d.run(log.active_users("client", from, to)).unwrap(),
        [1001, 1002]
    );
    assert_eq!(
        d.run(log.active_users("client", day(2017, 10, 31), day(2017, 10, 31)))
            .unwrap(),
        [1002]
    );
    let all = d.run(log.all_active_users(from, to)).unwrap();
    let user = |t: &str, uid| ActiveUser {
        user_type: t.to_string(),
        uid,
    };
    assert_eq!(
        all,
        [
            user("client", 1001),
            user("client", 1002),
            user("office", 7)
        ]
    );
    assert_eq!(
        d.run(log.all_active_users(day(2017, 9, 30), day(2017, 9, 30)))
            .unwrap(),
        [user("client", 1001)]
    );
    // And a login recorded by the API lands where the PHP code reads it.
    assert_eq!(
        d.run(log.record("client", 2000, day(2017, 10, 5))).unwrap(),
        Some(true)
    );
}

fn read_signins(d: &mut Driver, wrote: &Value) {
    let s = SignIn::builder().prefix(Prefix::none()).build().unwrap();
    for pair in wrote["signins"].as_array().expect("signins") {
        let at = bare_date(pair[0].as_str().expect("date"));
        let uid = pair[1].as_u64().expect("uid");
        assert_eq!(s.key(at), pair[0].as_str().unwrap());
        assert!(d.run(s.signed_in(uid, at)).unwrap(), "{uid} on {at}");
    }
    let (d20, d21) = (day(2022, 3, 20), day(2022, 3, 21));
    assert_eq!(d.run(s.count(d20)).unwrap(), 2);
    assert_eq!(d.run(s.active_every(d20, d21)).unwrap(), [100]);
    assert_eq!(d.run(s.active_any(d20, d21)).unwrap(), [100, 200, 300]);
    assert_eq!(d.run(s.days_signed_in(100, d20, d21)).unwrap(), [d20, d21]);
    assert_eq!(d.run(s.sign_in(400, day(2022, 3, 22))).unwrap(), Some(true));
}

fn read_sharded_hash(d: &mut Driver, wrote: &Value, server: &LocalServer) {
    let base = wrote["hash"]["base"].as_str().expect("base");
    let shards = wrote["hash"]["shards"].as_u64().expect("shards") as u32;
    let fields: BTreeMap<String, String> = wrote["hash"]["fields"]
        .as_object()
        .expect("fields")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("a value").to_string()))
        .collect();
    let h = ShardedHash::builder(base, Sharding::Crc32 { shards })
        .separator("_")
        .build()
        .unwrap();
    let names: Vec<&str> = fields.keys().map(String::as_str).collect();
    let got: Vec<Option<String>> = d.run(h.get_many(&names)).unwrap();
    let want: Vec<Option<String>> = fields.values().cloned().map(Some).collect();
    assert_eq!(got, want, "every field where shardKey put it");
    assert_eq!(d.run(h.len()).unwrap(), fields.len() as u64);
    let health = d.run(h.inspect(u64::from(shards))).unwrap();
    assert_eq!((health.sampled, health.missing), (u64::from(shards), 0));
    let shard_keys: Vec<String> = support::all_keys(&mut server.connection())
        .into_iter()
        .filter(|k| k.starts_with(base))
        .collect();
    assert_eq!(shard_keys.len(), shards as usize);
    assert!(
        shard_keys
            .iter()
            .all(|k| k.starts_with(&format!("{base}_"))),
        "{shard_keys:?}"
    );
    assert_eq!(d.run(h.set("written-by-rust", "yes")).unwrap(), Some(true));
}

fn read_bloom(d: &mut Driver, wrote: &Value) {
    let bf = JsHashBloom::new("bloom_user_email").unwrap();
    for email in wrote["emails"].as_array().expect("emails") {
        let email = email.as_str().expect("an email");
        assert!(d.run(bf.exists(email)).unwrap(), "{email}");
    }
    assert!(!d.run(bf.exists("nobody@example.com")).unwrap());
    assert_eq!(d.run(bf.add("dave@example.net")).unwrap(), Some(true));
}

#[test]
fn data_the_php_code_wrote_reads_through_the_api_and_back() {
    let server = support::server();
    support::each_driver(&server, |d| {
        let wrote = php(&server, "write");
        let keys: Vec<&str> = wrote["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for key in [
            "loginLog_2017-10_client_1001",
            "20220320",
            "seeduser_0",
            "bloom_user_email",
        ] {
            assert!(keys.contains(&key), "the PHP code wrote {key}: {keys:?}");
        }
        read_login_log(d, &wrote);
        read_signins(d, &wrote);
        read_sharded_hash(d, &wrote, &server);
        read_bloom(d, &wrote);
        // What the API wrote, read by the PHP code.
        let read = php(&server, "read");
        assert_eq!(read["hash"], "yes", "{}", d.name());
        assert_eq!(read["login"], 1);
        assert_eq!(read["signin"], 1);
        assert_eq!(read["bloom"], 1);
    });
}
