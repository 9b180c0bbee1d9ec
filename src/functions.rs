//! The bundle as one Redis Functions library: [`NAME`] (`redis_patterns`),
//! one function per script named after it (`lock.acquire` is
//! `lock_acquire`, [`ScriptInfo::function`]), read-only scripts registered
//! with the `no-writes` flag (so `FCALL_RO` runs them, on replicas too).
//! Each function is the shipped script — the generated checks and the body,
//! the same bytes `EVALSHA` runs — with `KEYS` and `ARGV` as its
//! parameters, so every call answers as under `EVALSHA`, refusals and the
//! "completely or not at all" guarantee included.
//!
//! Unlike the script cache, functions persist with the data (RDB and AOF)
//! and replicate to replicas: after a restart, a failover or
//! `SCRIPT FLUSH` the calls need no reload round trip. A connection in
//! [`CallMode::Functions`](crate::core::CallMode::Functions) sends every
//! script call as `FCALL` / `FCALL_RO` and loads the library
//! (`FUNCTION LOAD REPLACE`) on a server that answers "Function not found",
//! then sends the calls again — once, in order, as with `NOSCRIPT`.
//!
//! A server keeps one version of a library: functions are called by name,
//! not by content. After upgrading the crate, replace the library once
//! with [`load`] (or `redis-patterns load --functions`); until then calls
//! run the functions the server has.
//!
//! ```no_run
//! use redis_patterns::core::CallMode;
//! use redis_patterns::prelude::*;
//! use redis_patterns::{functions, scripts};
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?.with_call_mode(CallMode::Functions);
//! functions::load().run(&mut con)?; // FUNCTION LOAD REPLACE on every primary
//! let fence: i64 = scripts::lock::acquire("L{x}", "L{x}:fence", "L{x}:queue", "L{x}:places", "my-token", 5_000, 0, false, &[]).run(&mut con)?; // FCALL lock_acquire ...
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! let con = AsyncConnection::open("redis://127.0.0.1/")
//!     .await?
//!     .with_call_mode(CallMode::Functions);
//! let left: i64 = scripts::lock::owned("L{x}", "my-token").run_async(&con).await?; // FCALL_RO lock_owned ...
//! # Ok(())
//! # }
//! ```
//!
//! From `redis-cli`: `redis-patterns export DIR` writes the library to
//! `DIR/functions.lua`, `redis-cli -x FUNCTION LOAD REPLACE < DIR/functions.lua`
//! loads it, and `redis-cli FCALL lock_acquire 2 'redis:lock:{job}'
//! 'redis:lock:{job}:fence' my-token 30000` calls it.

use redis::Value;

use crate::core::{Batch, Op};
#[allow(unused_imports)] // for the docs
use crate::script::ScriptInfo;

pub use crate::core::library::{LIBRARY, NAME};
use crate::core::library::{check_loaded, load_cmd};

/// Loads (or replaces) the library: `FUNCTION LOAD REPLACE`, on every
/// primary of a cluster (replicas get it by replication). Returns
/// `(script name, function name)` pairs, in registry order.
pub fn load() -> Op<Vec<(&'static str, &'static str)>> {
    let mut batch = Batch::new();
    batch.add_keyless(load_cmd());
    Op::send(batch, |mut replies| {
        let reply = replies.take_value()?;
        if let Value::ServerError(e) = reply {
            return Err(crate::Error::from(redis::RedisError::from(e)));
        }
        check_loaded(reply)?;
        Ok(crate::scripts::ALL
            .iter()
            .map(|s| (s.name, s.function))
            .collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_has_one_function_per_script() {
        assert!(LIBRARY.starts_with(&format!("#!lua name={NAME}\n")));
        assert_eq!(
            LIBRARY.matches("redis.register_function{").count(),
            crate::scripts::ALL.len()
        );
        for s in crate::scripts::ALL {
            let flags = if s.read_only { "{'no-writes'}" } else { "{}" };
            assert!(
                LIBRARY.contains(&format!(
                    "function_name = '{}', flags = {flags},",
                    s.function
                )),
                "{}",
                s.name
            );
            assert_eq!(s.function, s.name.replace('.', "_"));
            let (_, body) = s.source().split_once('\n').expect("a shebang line");
            assert!(LIBRARY.contains(body), "{} as shipped", s.name);
        }
    }
}
