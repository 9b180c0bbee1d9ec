//! Compound Redis patterns as atomic Lua scripts, with typed Rust wrappers.
//!
//! Each pattern — an owner-token lock ([`lock`]), sharded hashes that stay
//! listpack-encoded ([`sharded_hash`], with a shard-count planner and a
//! streaming bulk import), fixed-width records packed into sharded strings
//! ([`packed`]), a rolling sharded store of recent records ([`rolling`]),
//! Bloom filters on plain bitmaps ([`bloom`], with the seed's PHP `JSHash` in
//! [`hash`]), exact daily unique visitors in sharded intsets ([`visits`]),
//! login logs and sign-in bitmaps ([`login_log`], [`signin`]) — is a set of Lua
//! scripts under `lua/<pattern>/<op>.lua`. The scripts are embedded at build
//! time, called by SHA1 with `EVALSHA` (read-only ones with `EVALSHA_RO`),
//! reloaded transparently after `SCRIPT FLUSH`, and wrapped in generated,
//! typed functions ([`scripts`]). On top of those, each pattern has a small
//! hand-written API that validates input before anything is sent.
//!
//! The same Lua serves every other language: `redis-patterns export DIR`
//! writes the scripts and a `manifest.json`, and `redis-patterns load`
//! prints the SHA1s for `redis-cli EVALSHA`.
//!
//! # Setup
//!
//! Redis >= 7.0. Every key a script touches is passed in `KEYS`, and the keys
//! of one call share a hash tag, so every script runs unchanged on Redis
//! Cluster.
//!
//! # Example: an owner-token lock
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::lock::Lock;
//!
//! # fn main() -> Result<(), redis_patterns::Error> {
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//! let lock = Lock::new("orders:42", Duration::from_secs(5))?;
//! {
//!     // Waits (50 ms retries with jitter) for at most one second.
//!     let mut guard = lock.lock(&mut con, Duration::from_secs(1))?;
//!     let fence = guard.fence(); // pass this to the resource you protect
//!     let _: () = redis::cmd("SET").arg("orders:42:state").arg(fence).query(guard.conn())?;
//! } // released here, only if we still own it
//! # Ok(())
//! # }
//! ```
//!
//! # Example: calling a generated wrapper directly
//!
//! ```no_run
//! use redis_patterns::scripts;
//!
//! # fn main() -> Result<(), redis_patterns::Error> {
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let fence: i64 = scripts::lock::acquire("L{x}", "L{x}:fence", "my-token", 5_000)?.invoke(&mut con)?;
//! assert!(fence > 0);
//! # Ok(())
//! # }
//! ```

pub mod bloom;
pub(crate) mod config;
pub mod error;
pub mod fanout;
pub mod hash;
pub mod keys;
pub mod lock;
pub mod login_log;
pub mod manifest;
pub mod packed;
pub mod rolling;
pub mod script;
pub mod scripts;
pub mod sharded_hash;
pub mod signin;
pub mod visits;

pub use error::{Error, ErrorKind, Result, ServerErrorKind};
pub use script::{ScriptCall, ScriptInfo, ScriptPipeline, load_all, load_all_async};
