//! Every script whose header says `IDEMPOTENT yes` (or `if <arg>`, with that
//! argument set) leaves the data exactly as one run does when it runs twice
//! with the same keys and arguments — what a resend after an unknown outcome
//! does. One generic test over the registry, from the example calls in
//! `tests/support/examples.rs`, comparing `DEBUG DIGEST` (which covers every
//! key, value and whether it has a TTL). A script that reads the server's
//! clock (`READS TIME`) writes lease ends that move with it (a semaphore's
//! holders are scored by the end of their lease): for it the data compared
//! is every key, its type and its value, sorted sets by their members —
//! a resend renews the same holder's lease from its own moment, as the one
//! run would have had it run then. The declaration reaches the calls
//! (`ScriptCall::is_idempotent`) and the manifest.

#[path = "support/examples.rs"]
mod examples;
mod support;

use examples::Example;
use redis::Value;
use redis_patterns::script::Idempotency;
use redis_patterns::{ScriptCall, ScriptInfo};
use support::digest;

/// Every key with its type and value (`DUMP`), a sorted set by its members
/// only (their scores are clock readings).
fn by_members(con: &mut redis::Connection) -> String {
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    keys.sort();
    let mut out = String::new();
    for k in keys {
        let ty: String = redis::cmd("TYPE").arg(&k).query(con).expect("TYPE");
        let value: Vec<Vec<u8>> = if ty == "zset" {
            redis::cmd("ZRANGE")
                .arg(&k)
                .arg(0)
                .arg(-1)
                .query(con)
                .expect("ZRANGE")
        } else {
            vec![redis::cmd("DUMP").arg(&k).query(con).expect("DUMP")]
        };
        out.push_str(&format!("{} {ty} {value:?}\n", String::from_utf8_lossy(&k)));
    }
    out
}

fn reset(con: &mut redis::Connection, e: &Example) {
    let _: () = redis::cmd("FLUSHALL").query(con).expect("FLUSHALL");
    for c in examples::seed().iter().chain(&e.setup) {
        let _: Value = c.query(con).expect("example setup");
    }
}

fn call(con: &mut redis::Connection, s: &ScriptInfo, keys: &[String], args: &[String]) -> Value {
    redis::cmd(if s.read_only { "EVALSHA_RO" } else { "EVALSHA" })
        .arg(s.sha1)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{}: the example call must succeed: {e}", s.name))
}

/// The dataset after running the example `runs` times from its data.
fn after(
    con: &mut redis::Connection,
    s: &ScriptInfo,
    e: &Example,
    args: &[String],
    runs: usize,
) -> String {
    reset(con, e);
    for _ in 0..runs {
        call(con, s, &e.keys, args);
    }
    if s.reads.contains(&"TIME") {
        by_members(con)
    } else {
        digest(con)
    }
}

#[test]
fn every_idempotent_script_run_twice_leaves_the_data_of_one_run() {
    let server = support::debug_server();
    let mut con = server.connection();
    let mut ours = redis_patterns::Connection::open(server.url()).expect("connect");
    redis_patterns::Request::run(redis_patterns::load_all(), &mut ours).expect("load the bundle");
    let list = examples::examples(false);
    let manifest =
        serde_json::to_value(redis_patterns::manifest::Manifest::bundled()).expect("json");
    let (mut twice, mut changed, mut conditional) = (0, 0, 0);
    for s in support::runnable_scripts(&mut ours) {
        let e = list
            .iter()
            .find(|e| e.script == s.name)
            .unwrap_or_else(|| panic!("{}: no example in tests/support/examples.rs", s.name));
        let entry = manifest["scripts"]
            .as_array()
            .expect("a list of scripts")
            .iter()
            .find(|m| m["name"] == s.name)
            .expect("in the manifest");
        let declared = ScriptCall::<Value>::raw(s, &e.keys, &e.args).is_idempotent();
        match s.idempotent {
            Idempotency::Always => {
                assert!(declared, "{}", s.name);
                assert_eq!(entry["idempotent"]["when"], "always", "{}", s.name);
            }
            Idempotency::Never => {
                assert!(!declared, "{}", s.name);
                assert_eq!(entry["idempotent"]["when"], "never", "{}", s.name);
                continue;
            }
            Idempotency::IfArg { name, index } => {
                assert_eq!(entry["idempotent"]["when"], "if_arg", "{}", s.name);
                assert_eq!(
                    entry["idempotent"]["arg"].as_str(),
                    Some(name),
                    "{}",
                    s.name
                );
                assert!(declared, "{}: the example sets {name}", s.name);
                // Without the argument the call is not idempotent, and
                // indeed a second run changes the data again.
                let mut without = e.args.clone();
                without[index] = "0".into();
                assert!(!ScriptCall::<Value>::raw(s, &e.keys, &without).is_idempotent());
                assert_ne!(
                    after(&mut con, s, e, &without, 1),
                    after(&mut con, s, e, &without, 2),
                    "{}: without {name} a resend applies twice",
                    s.name
                );
                conditional += 1;
            }
        }
        assert!(
            entry["idempotent"]["why"]
                .as_str()
                .is_some_and(|w| !w.is_empty()),
            "{}",
            s.name
        );
        let once = after(&mut con, s, e, &e.args, 1);
        if once != after(&mut con, s, e, &e.args, 0) {
            changed += 1;
        }
        assert_eq!(
            once,
            after(&mut con, s, e, &e.args, 2),
            "{}: declared idempotent, but a second run changed the data",
            s.name
        );
        twice += 1;
    }
    assert!(twice >= 25, "only {twice} idempotent scripts");
    // Most examples do write (the rest only move a TTL, or read).
    assert!(changed >= 18, "only {changed} examples changed the data");
    assert_eq!(conditional, 2, "sharded_hash.incr and packed.add");
}
