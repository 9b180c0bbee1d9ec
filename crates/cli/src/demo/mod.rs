//! `redis-patterns demo`: runs every pattern once against a server and says
//! what happened. One file per pattern; each `run` gets a connection and a
//! key prefix unique to this run, and cleans up after itself.

mod analytics;
mod bloom;
mod compact;
mod expiring_map;
mod layout;
mod lock;
mod login_log;
mod rate_limit;
mod rolling;
mod rwlock;
mod semaphore;
mod signin;
mod visits;

use redis_patterns::{Batch, Connection, ErrorKind, Request};
use redis_patterns_test_support::LocalServer;

use crate::fail::Failure;

type DemoResult = crate::fail::CliResult;

/// One pattern's demo: `run(url, prefix)`.
type Demo = fn(&str, &str) -> DemoResult;

/// Every demo in the order it runs, with its section's title.
const DEMOS: &[(&str, Demo)] = &[
    (
        "lock: owner-token lock with fencing tokens, woken waiters and renewal",
        lock::run,
    ),
    (
        "semaphore: at most N holders, each permit with its own lease",
        semaphore::run,
    ),
    (
        "rwlock: many readers or one writer, and a waiting writer goes first",
        rwlock::run,
    ),
    (
        "rolling: bounded, expiring, sharded store of recent records",
        rolling::run,
    ),
    (
        "bloom: Bloom filters on plain bitmaps (PHP JSHash bitmaps and sized filters)",
        bloom::run,
    ),
    (
        "sharded_hash: sharded hashes that stay listpack-encoded",
        compact::run,
    ),
    (
        "expiring_map: entries with a time to live and a max-idle time, still listpack",
        expiring_map::run,
    ),
    (
        "layout: layouts stored with the data, so a writer with another shard count is refused",
        layout::run,
    ),
    (
        "visits: exact daily unique visitors in sharded intsets",
        visits::run,
    ),
    (
        "login_log: the PHP login-log recipe (loginLog_<YYYY-MM>_<type>_<uid>) and its seven queries",
        login_log::run,
    ),
    (
        "signin: daily sign-in bitmaps, ranges and streaks",
        signin::run,
    ),
    (
        "analytics: bitmapist-style events per period, expressions and cohort tables on the server",
        analytics::run,
    ),
    (
        "rate_limit: GCRA and sliding windows in one round trip, with redis-cell's reply",
        rate_limit::run,
    ),
];

pub fn run(url: Option<&str>) -> DemoResult {
    // Keep the throwaway server alive until the demo ends.
    let local;
    let url = match url {
        Some(u) => u.to_string(),
        None => {
            local = LocalServer::start().map_err(|e| crate::fail::start_error(&e))?;
            crate::out::outln!(
                "started a throwaway redis-server on 127.0.0.1:{}",
                local.port()
            );
            local.url()
        }
    };
    let mut con = crate::conn::connect(&url)?;
    let info: redis::Value = con.query(redis::cmd("INFO").arg("server"))?;
    let version = server_version(&info).unwrap_or_else(|| "(version not reported)".into());
    let topology = if con.is_cluster() {
        "a Redis Cluster"
    } else {
        "one server"
    };
    crate::out::outln!("connected to {topology} at {url}: redis {version}");
    let loaded = redis_patterns::load_all().run(&mut con)?;
    crate::out::outln!(
        "loaded {} scripts (SCRIPT LOAD, server SHA1s match the registry)\n",
        loaded.len()
    );

    let prefix = format!("demo:{}:", std::process::id());
    for (title, demo) in DEMOS {
        section(title);
        demo(&url, &prefix)?;
    }
    crate::out::outln!("\ndemo finished");
    Ok(())
}

/// `redis_version` from `INFO server` (on a cluster: the first node's).
fn server_version(info: &redis::Value) -> Option<String> {
    let text = match info {
        redis::Value::Map(nodes) => nodes.first().map(|(_, v)| v.clone())?,
        v => v.clone(),
    };
    let text: String = redis::FromRedisValue::from_redis_value(text).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("redis_version:").map(str::to_string))
}

fn section(title: &str) {
    crate::out::outln!("== {title}");
}

/// The refusal a demo shows: the error of `result` when `expected` says it
/// is the one; otherwise why the demo fails (`accepted`: what it means that
/// the call went through).
fn refusal<T>(
    result: redis_patterns::Result<T>,
    expected: impl FnOnce(&ErrorKind) -> bool,
    accepted: &str,
) -> Result<ErrorKind, Failure> {
    match result.map_err(|e| e.into_kind()) {
        Err(kind) if expected(&kind) => Ok(kind),
        Ok(_) => Err(accepted.into()),
        Err(e) => Err(redis_patterns::Error::from(e).into()),
    }
}

/// Deletes the demo's `keys` (one batch, each `DEL` on its key's slot).
fn delete(con: &mut Connection, keys: impl IntoIterator<Item = String>) -> DemoResult {
    let mut batch = Batch::new();
    for key in keys {
        let mut del = redis::cmd("DEL");
        del.arg(&key);
        batch.add(&key, del);
    }
    batch.run(con)?.all::<i64>()?;
    Ok(())
}
