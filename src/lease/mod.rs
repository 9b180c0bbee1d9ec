//! Leases: what the lock ([`crate::lock`]), the semaphore
//! ([`crate::semaphore`]) and the read-write lock ([`crate::rwlock`])
//! share — an owner token per holder ([`Lock::new_token`](crate::lock::Lock::new_token)), a lease per holder
//! on the server, the one waiting loop of a blocking acquire
//! ([`WaitMode`]), and the guards that hold a lease while their holder
//! works, renewing it every lease/3 ([`Guard`] on a thread, [`AsyncGuard`]
//! in a tokio task) and reporting its loss ([`Lost`]).
//!
//! A guard is built the same way on both drivers, for every resource
//! ([`Leasable`]: a [`Lock`](crate::lock::Lock), a
//! [`Semaphore`](crate::semaphore::Semaphore), a read or write side of an
//! [`RwLock`](crate::rwlock::RwLock)):
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::lease::{AsyncGuard, Guard};
//! use redis_patterns::semaphore::Semaphore;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let exports = Semaphore::new("exports", 4, Duration::from_secs(30))?;
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! {
//!     let permit = Guard::acquire(&exports, &mut con, Duration::from_secs(5))?;
//!     permit.check()?; // Err(LockLost) once the lease was lost
//! } // given back here
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let exports = Semaphore::new("exports", 4, Duration::from_secs(30))?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let permit = AsyncGuard::acquire(&exports, &con, Duration::from_secs(5)).await?;
//! permit.release().await?;
//! # Ok(())
//! # }
//! ```

pub(crate) mod contract;
mod guard;
#[cfg(feature = "tokio")]
mod guard_async;
pub(crate) mod leasing;
mod resource;
mod token;
pub(crate) mod wait;

pub use guard::{Guard, Lost, LostReason};
#[cfg(feature = "tokio")]
pub use guard_async::{AsyncGuard, Held};
pub use resource::Leasable;
pub(crate) use resource::Resource;
pub(crate) use token::{TOKEN_BYTES, check_token, new_token};
pub use wait::WaitMode;
