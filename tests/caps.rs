//! What a server can do, detected once per connection ([`Caps`]), checked
//! against the server itself on whichever server `$REDIS_SERVER` is (CI
//! runs this file on Redis 7.0, Redis 8.2, Valkey 8.1 and Valkey 9.1):
//!
//! - the name and version match the binary's own `--version` line (never
//!   inferred from `redis_version`: Valkey reports 7.2.4 there);
//! - each capability is on exactly when every one of its commands runs on
//!   this server (each is sent, raw);
//! - a cluster of the same binary says the same, through both drivers;
//! - detection happens once per connection (`COMMAND INFO` calls counted in
//!   `INFO commandstats`), and not at all when the caps were set;
//! - an op sees the caps its connection was set to, which is how the
//!   every-server test of a pattern with a newer-command path runs both of
//!   its paths on one server ([`both_paths`]).

mod support;

use redis_patterns::core::{Capability, Caps, ServerName, Version};
use redis_patterns_test_support::server_binary;
use support::Driver;

/// The name and version the binary's `--version` prints (`Redis server
/// v=8.2.3 ...`, `Valkey server v=9.1.2 ...`).
fn binary_says() -> (ServerName, Version) {
    let out = std::process::Command::new(server_binary())
        .arg("--version")
        .output()
        .expect("server --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let name = match text.split_whitespace().next() {
        Some("Redis") => ServerName::Redis,
        Some("Valkey") => ServerName::Valkey,
        other => panic!("unknown server {other:?} in {text}"),
    };
    let version = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .and_then(Version::parse)
        .unwrap_or_else(|| panic!("no v= in {text}"));
    (name, version)
}

/// Whether every command of the capability `name` runs on this server,
/// each sent raw on scratch keys.
fn runs_everything_of(con: &mut redis::Connection, name: &str) -> bool {
    let _: () = redis::cmd("HSET")
        .arg("probe:h")
        .arg("f")
        .arg("v")
        .query(con)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("probe:a")
        .arg("x")
        .query(con)
        .unwrap();
    let probes: &[&[&str]] = match name {
        "hash_field_ttl" => &[
            &["HEXPIRE", "probe:h", "100", "FIELDS", "1", "f"],
            &["HPEXPIRE", "probe:h", "100000", "FIELDS", "1", "f"],
            &["HPEXPIREAT", "probe:h", "4102444800000", "FIELDS", "1", "f"],
            &["HPTTL", "probe:h", "FIELDS", "1", "f"],
            &["HPERSIST", "probe:h", "FIELDS", "1", "f"],
        ],
        "hash_getex" => &[
            &["HGETEX", "probe:h", "EX", "100", "FIELDS", "1", "f"],
            &["HSETEX", "probe:h", "EX", "100", "FIELDS", "1", "f", "w"],
        ],
        "bitop_diff" => &[
            &["BITOP", "DIFF", "probe:d", "probe:a", "probe:a"],
            &["BITOP", "DIFF1", "probe:d", "probe:a", "probe:a"],
            &["BITOP", "ANDOR", "probe:d", "probe:a", "probe:a"],
            &["BITOP", "ONE", "probe:d", "probe:a", "probe:a"],
        ],
        "delifeq" => &[&["DELIFEQ", "probe:a", "x"]],
        other => panic!("no probe for the capability {other}: add one here"),
    };
    probes.iter().all(|p| {
        redis::cmd(p[0])
            .arg(&p[1..])
            .query::<redis::Value>(con)
            .is_ok()
    })
}

/// The caps the connection behind `driver` detected.
fn caps_of(driver: &mut Driver) -> Caps {
    driver.run(Caps::read()).expect("Caps::read")
}

#[test]
fn caps_say_what_the_server_is_and_runs() {
    let server = support::server();
    let (name, version) = binary_says();
    for mut d in support::drivers(&server.url()) {
        let caps = caps_of(&mut d);
        assert_eq!(caps.server, name, "{}", d.name());
        assert_eq!(caps.version, Some(version), "{}", d.name());
        assert!(caps.info_reported && caps.commands_reported);
        let mut raw = server.connection();
        for c in Capability::ALL {
            assert_eq!(
                caps.has(c.name),
                Some(runs_everything_of(&mut raw, c.name)),
                "{} on {name:?} {version} ({})",
                c.name,
                d.name()
            );
        }
    }
}

#[test]
fn a_cluster_says_what_one_server_of_the_same_binary_says() {
    let server = support::server();
    let one = caps_of(&mut support::drivers(&server.url()).remove(0));
    let cluster = support::cluster();
    for mut d in support::drivers(&cluster.urls()[0]) {
        assert!(d.is_cluster());
        assert_eq!(caps_of(&mut d), one, "{}", d.name());
    }
}

/// `COMMAND INFO` calls the server counted (`INFO commandstats`).
fn command_info_calls(server: &redis_patterns_test_support::LocalServer) -> u64 {
    server
        .info("commandstats")
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("cmdstat_command|info:calls=")?;
            rest.split(',').next()?.parse().ok()
        })
        .unwrap_or(0)
}

#[test]
fn caps_are_detected_once_per_connection() {
    let server = support::server();
    let mut con = support::connect(&server.url());
    assert_eq!(con.caps(), None, "nothing is sent before the first op");
    for _ in 0..5 {
        let _: i64 = con.query(&redis::cmd("DBSIZE")).unwrap();
    }
    assert_eq!(command_info_calls(&server), 1, "five ops, one detection");
    let detected = con.caps().expect("known after the first op");
    let mut clone = con.try_clone().unwrap();
    assert_eq!(clone.caps(), Some(detected));
    let _: i64 = clone.query(&redis::cmd("DBSIZE")).unwrap();
    assert_eq!(command_info_calls(&server), 1, "a clone keeps them");

    let rt = support::runtime();
    let asy = rt
        .block_on(redis_patterns::AsyncConnection::open(server.url()))
        .unwrap();
    for _ in 0..3 {
        let _: i64 = rt.block_on(asy.query(&redis::cmd("DBSIZE"))).unwrap();
    }
    let later = asy.clone();
    let _: i64 = rt.block_on(later.query(&redis::cmd("DBSIZE"))).unwrap();
    assert_eq!(
        command_info_calls(&server),
        2,
        "one more connection, one more"
    );
    assert_eq!(later.caps(), Some(detected));

    let mut set = support::connect(&server.url());
    set.set_caps(Caps::default());
    use redis_patterns::Request as _;
    assert_eq!(Caps::read().run(&mut set).unwrap(), Caps::default());
    assert_eq!(command_info_calls(&server), 2, "set caps are not detected");
}

/// Runs `op()` on `driver` as the server is, and again with the capability
/// `name` turned off: the path every server has. Both must give the same
/// result, which is returned. The every-server test of an operation with a
/// newer-command path calls this for its capability, on each server CI
/// runs (where the server lacks it, both runs take the common path).
pub fn both_paths<T: PartialEq + std::fmt::Debug + Send + 'static>(
    driver: &mut Driver,
    name: &str,
    op: impl Fn() -> redis_patterns::Op<T>,
) -> T {
    let detected = caps_of(driver);
    let newer = driver.run(op()).expect("on the server's own path");
    set_caps(driver, detected.without(name));
    let common = driver.run(op()).expect("on the common path");
    set_caps(driver, detected);
    assert_eq!(newer, common, "{name}: both paths give the same result");
    newer
}

fn set_caps(driver: &mut Driver, caps: Caps) {
    match driver {
        Driver::Sync(con) => con.set_caps(caps),
        Driver::Async(con, _) => con.set_caps(caps),
    }
}

#[test]
fn both_paths_runs_an_op_on_the_server_s_path_then_on_the_common_one() {
    use std::sync::{Arc, Mutex};
    let server = support::server();
    for mut d in support::drivers(&server.url()) {
        let detected = caps_of(&mut d);
        for c in Capability::ALL {
            // What a pattern's op reads to choose its path (Env::caps); the
            // result itself does not depend on it, as a pattern's must not.
            let seen = Arc::new(Mutex::new(Vec::new()));
            let log = Arc::clone(&seen);
            let name = c.name;
            let got = both_paths(&mut d, name, move || {
                let log = Arc::clone(&log);
                redis_patterns::Op::with_env(move |env| {
                    log.lock().unwrap().push(env.caps().has(name) == Some(true));
                    redis_patterns::Op::ready(env.is_cluster())
                })
            });
            assert!(!got);
            let has = detected.has(name) == Some(true);
            assert_eq!(*seen.lock().unwrap(), [has, false], "{name} ({})", d.name());
            assert_eq!(caps_of(&mut d), detected, "restored after {name}");
        }
    }
}

#[test]
fn a_user_denied_command_gets_no_capability_and_still_runs() {
    use redis_patterns::Request as _;
    let server = support::server();
    let mut admin = server.connection();
    support::command_ok(
        &mut admin,
        &[
            "ACL", "SETUSER", "bare", "on", ">pw", "~*", "-@all", "+info", "+dbsize",
        ],
    );
    let url = format!("redis://bare:pw@127.0.0.1:{}/", server.port());
    let mut con = redis_patterns::Connection::open(url.as_str()).unwrap();
    let caps = Caps::read().run(&mut con).unwrap();
    let (name, version) = binary_says();
    assert_eq!((caps.server, caps.version), (name, Some(version)));
    assert!(caps.info_reported && !caps.commands_reported);
    assert!(
        caps.names().is_empty(),
        "COMMAND refused: no newer command assumed"
    );
    let n: i64 = con.query(&redis::cmd("DBSIZE")).unwrap();
    assert_eq!(n, 0);
}
