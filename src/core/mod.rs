//! The call core every pattern is built on: operations ([`Op`]) written
//! once and run by one sync driver ([`Connection`]) and one async driver
//! ([`AsyncConnection`]); batches of commands ([`Batch`]) sent one pipeline
//! per node, with `NOSCRIPT` reloads and redirects handled underneath.
//!
//! One file per concept: `op` (the op and its combinators), [`machine`] (the step machine
//! under an op, for those who write their own), `batch` (a
//! batch), `exchange` (the protocol that sends one: reloads, redirects,
//! retries), `drive` (one op run to completion:
//! its steps and exchanges, as requests for I/O), `conn` / `conn_async`
//! (the two drivers, I/O only), `settings` (what a driver is set to, and
//! its accessors), `nodes` (timeouts, cluster detection, node addresses,
//! a cluster's seeds), `cluster` (one cluster's state without I/O, for both
//! drivers: the slot map, the known nodes, routing and refresh decisions), [`retry`] (what is sent again and when: the
//! [`RetryPolicy`], and which replies prove a command did not run),
//! `resend` (which plain commands are safe to send twice, and what a
//! resend's reply can tell), `durability`
//! (waiting for replicas), `undo` (what an async op dropped unfinished
//! gives back), `request_id` (a name for one call, so that a
//! resend is recognised), `setters` (the builders' setters, written once), `slots` (a cluster's slot map), `script` (the
//! script registry and one prepared call), `error` (the error type), `error_codes` (the
//! one table of the scripts' domain error codes and their typed kinds),
//! `error_reply` (an error reply as a typed error), `keys`
//! (key names and hash tags), `config` (`CONFIG GET`), `memory` (a server's
//! memory figures, read before a big allocation), `alloc` (its allocator
//! and what it reserves for a string), `retention` (how long
//! time-bucketed keys live), `call_mode` (script calls as `EVALSHA` or
//! `FCALL`), `library` (the Functions library those calls load), [`caps`] (what the server can do, detected once per
//! connection), `probe` (its detection, as ops), `request` (what a driver
//! runs: [`Request`], above the drivers).

pub(crate) mod alloc;
pub(crate) mod batch;
pub(crate) mod call_mode;
pub mod caps;
#[cfg(feature = "cluster")]
pub(crate) mod cluster;
pub(crate) mod config;
pub(crate) mod conn;
#[cfg(feature = "tokio")]
pub(crate) mod conn_async;
pub(crate) mod drive;
pub(crate) mod durability;
pub mod error;
pub(crate) mod error_codes;
pub(crate) mod error_reply;
pub(crate) mod exchange;
pub mod keys;
pub(crate) mod library;
pub mod machine;
pub(crate) mod memory;
pub(crate) mod nodes;
pub(crate) mod op;
pub(crate) mod probe;
pub(crate) mod request;
pub(crate) mod request_id;
pub(crate) mod resend;
pub(crate) mod retention;
pub mod retry;
pub mod script;
pub(crate) mod setters;
pub(crate) mod settings;
pub(crate) mod slots;
pub(crate) mod subscriber;
#[cfg(feature = "tokio")]
pub(crate) mod subscriber_async;
#[cfg(feature = "tokio")]
pub(crate) mod undo;
pub(crate) mod wait_stats;

pub use alloc::Allocator;
pub use batch::Batch;
pub use call_mode::CallMode;
pub use caps::{Capability, Caps, ServerName, Version};
pub use conn::Connection;
#[cfg(feature = "tokio")]
pub use conn_async::AsyncConnection;
pub use durability::Durability;
pub use memory::ServerMemory;
pub(crate) use op::{Env, Machine, Step};
pub use op::{Op, Replies};
pub use request::Request;
pub use request_id::RequestId;
pub use retention::Retention;
pub use retry::{RetryPolicy, RetryPolicyBuilder};
pub use script::IntoCall;
pub use wait_stats::WaitStats;

pub use config::LimitsSource;
/// `CONFIG GET` as an operation (`None` when the server refuses `CONFIG`).
pub use config::get as config_get;

pub(crate) use setters::setters;
