//! A call inside a script that the user's ACL denies: the server names only
//! the script's line; the Rust API names the command and its key or channel
//! (`denied: GET on KEYS[1] (lock), line N of lock.release`). Every client
//! names it the same way, checked here with the real interpreters against
//! the Rust API's own words on the same server.

use std::path::Path;
use std::process::Command;

use redis_patterns::lock::Lock;
use redis_patterns_test_support::LocalServer;

use super::typescript::{exported_ts, node};
use super::{exported, php, php_exported, python, support};

const PYTHON: &str = r#"
import sys, redis
from redis_patterns import Lock
r = redis.Redis.from_url(sys.argv[1])
try:
    Lock(r, "denied").release("t")
    print("released")
except Exception as e:
    print(e)
"#;

const PHP: &str = r#"<?php
require $argv[1] . '/autoload.php';
$r = new Redis();
$r->connect('127.0.0.1', (int) $argv[2]);
$r->auth(['noget', 'pw']);
try {
    (new RedisPatterns\Lock($r, 'denied'))->release('t');
    echo "released\n";
} catch (Throwable $e) {
    echo $e->getMessage(), "\n";
}
"#;

const TYPESCRIPT: &str = r#"
const { Redis } = require("ioredis");
const { Lock } = require(process.argv[1]);
(async () => {
  const r = new Redis(process.argv[2]);
  try {
    await new Lock(r, "denied").release("t");
    console.log("released");
  } catch (e) {
    console.log(e.message);
  }
  r.disconnect();
})();
"#;

/// The `denied: …, line N of SCRIPT` part of an error's text.
fn denied_part(text: &str) -> Option<&str> {
    let at = text.find("denied: ")?;
    let line = at + text[at..].find(", line ")?;
    let end = text[line..].find(')').map_or(text.len(), |e| line + e);
    Some(&text[at..end])
}

/// A user that may do everything but GET, which `lock.release` runs before
/// any write and no generated check probes.
fn user_denied_get(server: &LocalServer) -> String {
    let mut con = server.connection();
    let mut acl = redis_patterns::redis::cmd("ACL");
    for a in [
        "SETUSER",
        "noget",
        "on",
        ">pw",
        "~*",
        "allchannels",
        "+@all",
        "-get",
    ] {
        acl.arg(a);
    }
    let _: () = acl.query(&mut con).expect("ACL SETUSER");
    format!("redis://noget:pw@127.0.0.1:{}/", server.port())
}

fn output(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the interpreter runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn script(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the snippet");
    path
}

#[test]
fn every_client_names_the_call_the_acl_denied_as_the_rust_api_does() {
    let server = support::server();
    let url = user_denied_get(&server);
    let mut con = redis_patterns::Connection::open(url.as_str()).expect("connect as noget");
    let lock = Lock::new("denied", std::time::Duration::from_secs(30)).expect("valid");
    let rust = redis_patterns::Request::run(lock.release("t"), &mut con)
        .expect_err("GET is denied")
        .to_string();
    let want = denied_part(&rust).unwrap_or_else(|| panic!("Rust names the call: {rust}"));
    assert!(
        want.starts_with("denied: GET on KEYS[1] (lock), line "),
        "{want}"
    );

    let py = exported("denied");
    let said = output(python(&py, "redis").arg("-c").arg(PYTHON).arg(&url));
    assert_eq!(denied_part(&said), Some(want), "Python: {said}");

    let php_dir = php_exported("denied");
    let file = script(&php_dir, "denied.php", PHP);
    let said = output(
        php()
            .arg(&file)
            .arg(&php_dir)
            .arg(server.port().to_string()),
    );
    assert_eq!(denied_part(&said), Some(want), "PHP: {said}");

    let ts = exported_ts("denied");
    let said = output(node().arg("-e").arg(TYPESCRIPT).arg(&ts).arg(&url));
    assert_eq!(denied_part(&said), Some(want), "TypeScript: {said}");
    for dir in [py, php_dir, ts] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
