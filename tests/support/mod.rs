//! Test support: a fresh `redis-server` per test, on a free loopback port.
//!
//! [`server`] wraps [`redis_patterns::server::LocalServer`]: it panics with a
//! clear message naming the binary when `redis-server` is missing, and the
//! server is killed and reaped on drop (printing the end of its log when the
//! test panicked).
#![allow(dead_code)]

use redis_patterns::server::LocalServer;

/// Starts a fresh server with default settings.
pub fn server() -> LocalServer {
    server_with(&[])
}

/// Starts a fresh server with extra `--name value` arguments.
pub fn server_with(extra: &[&str]) -> LocalServer {
    LocalServer::start_with(extra)
        .unwrap_or_else(|e| panic!("cannot start redis-server for this test: {e}"))
}

/// Every key in the server's database 0, sorted.
pub fn all_keys(con: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS *");
    keys.sort();
    keys
}

/// `DBSIZE`
pub fn dbsize(con: &mut redis::Connection) -> i64 {
    redis::cmd("DBSIZE").query(con).expect("DBSIZE")
}
