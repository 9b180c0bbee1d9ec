//! The lock's scoped async form, [`Lock::with_lock`]: an
//! [`AsyncGuard`](crate::lease::AsyncGuard) held while a closure runs. The
//! guards themselves are the [`lease`](crate::lease) guards of every
//! resource: `Guard::acquire(&lock, &mut con, timeout)` and
//! `AsyncGuard::acquire(&lock, &con, timeout).await`.

use std::future::Future;
use std::time::Duration;

use super::Lock;
use crate::core::AsyncConnection;
use crate::error::Result;
use crate::lease::{AsyncGuard, Held};

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
        F: FnOnce(Held<Lock>) -> Fut,
        Fut: Future<Output = T>,
    {
        AsyncGuard::hold(self, con, timeout, critical).await
    }
}
