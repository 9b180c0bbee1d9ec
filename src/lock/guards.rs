//! The lock's guards: [`LockGuard`] (sync, renewed on a thread) and
//! [`AsyncLockGuard`] (async, renewed in a tokio task) are the
//! [`lease`](crate::lease) guards of a [`Lock`]; [`Lock::with_lock`] is the
//! scoped async form.

#[cfg(feature = "tokio")]
use std::future::Future;
#[cfg(feature = "tokio")]
use std::time::Duration;

use super::Lock;
#[cfg(feature = "tokio")]
use crate::core::AsyncConnection;
#[cfg(feature = "tokio")]
use crate::error::Result;
#[cfg(feature = "tokio")]
use crate::lease::AsyncGuard;

/// Holds a lock until dropped or released, renewing its lease every
/// lease/3 on a thread of its own: `LockGuard::acquire(&lock, &mut con,
/// timeout)` (see [`Guard`](crate::lease::Guard)).
pub type LockGuard<'a> = crate::lease::Guard<'a, Lock>;

/// Holds a lock until released or dropped, renewing its lease every
/// lease/3 in a tokio task: `AsyncLockGuard::acquire(&lock, &con,
/// timeout).await` (see [`AsyncGuard`]).
#[cfg(feature = "tokio")]
pub type AsyncLockGuard = AsyncGuard<Lock>;

/// What a holder sees of its lock while an [`AsyncLockGuard`] holds it
/// (see [`crate::lease::Held`]).
#[cfg(feature = "tokio")]
pub type Held = crate::lease::Held<Lock>;

#[cfg(feature = "tokio")]
impl Lock {
    /// Runs `critical` while holding the lock (acquired as
    /// [`Lock::acquire`] does, renewed every lease/3), then releases it:
    /// [`AsyncGuard::hold`] for a lock. `critical` gets a [`Held`]: the
    /// fencing token to pass on, and the loss signal to check or race
    /// against. Returns its output, or
    /// [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) when the lease
    /// was lost while it ran.
    pub async fn with_lock<T, F, Fut>(
        &self,
        con: &AsyncConnection,
        timeout: Duration,
        critical: F,
    ) -> Result<T>
    where
        F: FnOnce(Held) -> Fut,
        Fut: Future<Output = T>,
    {
        AsyncGuard::hold(self, con, timeout, critical).await
    }
}
