//! Compound Redis patterns as atomic Lua scripts, with typed Rust wrappers.
//!
//! Each pattern — an owner-token lock ([`lock`]: waiters woken by the
//! release, renewal, replica-acknowledged fencing), a semaphore with
//! expiring permits ([`semaphore`]), a read-write lock ([`rwlock`]) — the
//! three with guards that renew their leases ([`lease`]) —, sharded hashes that stay
//! listpack-encoded ([`sharded_hash`], with a shard-count planner and a
//! streaming bulk import), fixed-width records packed into sharded strings
//! ([`packed`]), a rolling sharded store of recent records ([`rolling`]),
//! Bloom filters on plain bitmaps ([`bloom`], with PHP's `JSHash` in
//! [`bloom::BloomHash`]), exact daily unique visitors in sharded intsets ([`visits`]),
//! login logs and sign-in bitmaps ([`login_log`], [`signin`]), rate limits
//! (GCRA and sliding windows, [`rate_limit`]) — is a set of Lua
//! scripts under `lua/<pattern>/<op>.lua`. The scripts are embedded at build
//! time, called by SHA1 with `EVALSHA` (read-only ones with `EVALSHA_RO`),
//! reloaded transparently after `SCRIPT FLUSH`, and wrapped in generated,
//! typed functions ([`scripts`]). On top of those, each pattern has a small
//! hand-written API that validates input before anything is sent.
//!
//! The same Lua serves every other language: `redis-patterns export DIR`
//! writes the scripts and a `manifest.json`, and `redis-patterns load`
//! prints the SHA1s for `redis-cli EVALSHA`. The same scripts also ship as
//! one Redis Functions library ([`functions`]), which persists with the
//! data: a connection in [`CallMode::Functions`] sends every script call as
//! `FCALL` / `FCALL_RO`.
//!
//! The guide ([`guide`], the book of the repository's `docs/`) shows every pattern at work, from Rust and from
//! the other languages, on one server and on a cluster.
//!
//! # Running an operation
//!
//! Every pattern method builds an [`Op`] and sends nothing; a driver runs
//! it. The same op runs on the sync [`Connection`] (`.run(&mut con)`) and on
//! the async [`AsyncConnection`] (`.run_async(&con).await`), on one
//! server or on a Redis Cluster: the connection finds out which (`INFO
//! cluster`, once) and sends a fan-out as one pipeline per node.
//!
//! Every async operation is safe to cancel: dropped at any await (a
//! `tokio::time::timeout`, a `select!` branch that lost, an aborted task),
//! it leaves no lock, permit, lease or subscription behind — an acquire's
//! token is chosen before anything is sent, and what it may have taken is
//! released by a task the connection spawns ([`Op::undo_on_cancel`]). Each
//! coordination operation's docs say what a drop leaves; the guide's
//! [cancellation chapter](guide::cancellation) has the whole picture.
//!
//! Connections recover by themselves after a restart or a failover: a call
//! whose reply proves it did not run, or that could not be sent, is sent
//! again by the connection's [`RetryPolicy`](core::RetryPolicy); one lost
//! with the connection only when its script (or command) is idempotent,
//! otherwise it fails with [`ErrorKind::OutcomeUnknown`]
//! (see [`core::retry`]; [`Durability`](core::Durability) waits for
//! replicas).
//!
//! Redis >= 7.0. Every key a script touches is passed in `KEYS`, and the keys
//! of one call share a hash tag, so every script runs unchanged on Redis
//! Cluster. The crate re-exports [`redis`] and [`chrono`], so a service
//! needs only `redis-patterns` in its `Cargo.toml`.
//!
//! # Example: an owner-token lock, sync and async
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::lease::Guard;
//! use redis_patterns::lock::Lock;
//! use redis_patterns::redis; // the redis crate, re-exported
//!
//! # fn main() -> Result<(), redis_patterns::Error> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let lock = Lock::new("orders:42", Duration::from_secs(5))?;
//! {
//!     // Waits for at most one second, woken by the holder's release; the
//!     // guard renews the lease every lease/3 while it is held.
//!     let mut guard = Guard::acquire(&lock, &mut con, Duration::from_secs(1))?;
//!     let fence = guard.fence(); // pass this to the resource you protect
//!     let _: () = guard
//!         .conn()
//!         .query(redis::cmd("SET").arg("orders:42:state").arg(fence))?;
//! } // released here, only if we still own it
//! # Ok(())
//! # }
//! # async fn run() -> Result<(), redis_patterns::Error> {
//! # let lock = Lock::new("orders:42", Duration::from_secs(5))?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let lease = lock.acquire(Duration::from_secs(1)).run_async(&con).await?;
//! lock.release(&lease.token).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Example: calling a generated wrapper directly
//!
//! ```no_run
//! use redis_patterns::prelude::*;
//! use redis_patterns::scripts;
//!
//! # fn main() -> Result<(), redis_patterns::Error> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let fence: i64 = scripts::lock::acquire("L{x}", "L{x}:fence", "L{x}:queue", "L{x}:places", "my-token", 5_000, 0, false, &[]).run(&mut con)?;
//! assert!(fence > 0);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README, whose Rust examples are doctests too (its other examples
/// run in `crates/cli/tests/docs`, as the guide's do).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod acl;
pub mod analytics;
pub mod bitmap;
pub mod bloom;
pub mod contract;
pub mod core;
pub mod expiring_map;
pub use crate::core::{error, keys, script};
pub mod functions;
pub mod guide;
pub mod layout;
pub mod lease;
pub mod lock;
pub mod login_log;
pub mod manifest;
pub mod packed;
pub mod rate_limit;
pub mod rolling;
pub mod rwlock;
pub mod scripts;
pub mod semaphore;
pub mod sharded_hash;
pub mod signin;
pub mod visits;

#[cfg(feature = "tokio")]
pub use crate::core::AsyncConnection;
pub use crate::core::{Batch, CallMode, Connection, Op, Replies, Request, Retention};
/// The date and time library of the patterns' APIs, re-exported.
pub use chrono;
pub use error::{Error, ErrorKind, MemoryLimit, Result, ServerErrorKind};
/// The client library this crate is built on, re-exported so that users
/// need not match its version.
pub use redis;

/// `use redis_patterns::prelude::*;` brings [`Request`] (for `.run` and
/// `.run_async`) and the connection types into scope.
pub mod prelude {
    #[cfg(feature = "tokio")]
    pub use crate::AsyncConnection;
    pub use crate::{Connection, Op, Request};
}
pub use script::{ScriptCall, ScriptInfo};
pub use scripts::load_all;
