//! [`AsyncLockGuard`]: the async guard, and its scoped form
//! [`Lock::with_lock`]. A tokio task (on a clone of the
//! [`AsyncConnection`]) extends the lease every lease/3 while the lock is
//! held; it stops when the guard is released or dropped (dropping it lets
//! the task release the lock), and at the first renewal that finds the
//! lock no longer owned by the guard's token, or when renewals failed until
//! the lease had run out. The holder learns of a loss through [`Held`]: a
//! flag to check, and a future to `select!` on.

use std::future::Future;

use tokio::sync::{oneshot, watch};

use super::guard::{Lost, Renewals, holder_accessors};
use super::{Lease, Lock};
use crate::core::{AsyncConnection, Request};
use crate::error::Result;

/// What a holder sees of its lock while an [`AsyncLockGuard`] holds it:
/// the lease, and whether it was lost. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Held {
    lock: Lock,
    lease: Lease,
    lost: watch::Receiver<Option<Lost>>,
}

impl Held {
    /// The lock's key.
    pub fn key(&self) -> &str {
        self.lock.key()
    }

    holder_accessors!();

    /// The lost lease, once a renewal found the lock lost.
    pub fn lost(&self) -> Option<Lost> {
        self.lost.borrow().clone()
    }

    /// Resolves when the lease is lost (never, while it is held): race the
    /// critical section against it with `tokio::select!`.
    pub async fn lost_signal(&self) -> Lost {
        let mut rx = self.lost.clone();
        loop {
            if let Some(lost) = rx.borrow_and_update().clone() {
                return lost;
            }
            if rx.changed().await.is_err() {
                // The renewals ended without a loss (released).
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Holds a lock until released or dropped, renewing its lease every
/// lease/3 in a tokio task. Dropping it has the task release the lock (only
/// if this owner still holds it); [`AsyncLockGuard::release`] does it now
/// and reports the outcome.
#[derive(Debug)]
pub struct AsyncLockGuard {
    held: Held,
    con: AsyncConnection,
    /// Tells the task to stop: `true` to release the lock on its way out.
    stop: Option<oneshot::Sender<bool>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl AsyncLockGuard {
    /// Waits for `lock` as [`Lock::acquire`] does (on a clone of `con`) and
    /// starts the renewals. Call it inside a tokio runtime.
    pub async fn acquire(
        lock: &Lock,
        con: &AsyncConnection,
        timeout: std::time::Duration,
    ) -> Result<Self> {
        let mut con = con.clone();
        let lease = lock.acquire(timeout).run_async(&mut con).await?;
        let (lost_tx, lost) = watch::channel(None);
        let (stop, stopped) = oneshot::channel();
        let renewals = Renewals::new(lock.clone(), lease.clone());
        let task = tokio::spawn(renew(renewals, con.clone(), lost_tx, stopped));
        Ok(Self {
            held: Held {
                lock: lock.clone(),
                lease,
                lost,
            },
            con,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// What the holder sees: the lease and whether it was lost.
    pub fn held(&self) -> Held {
        self.held.clone()
    }

    /// The fencing token of this acquire.
    pub fn fence(&self) -> u64 {
        self.held.fence()
    }

    /// The lost lease, once a renewal found the lock lost.
    pub fn lost(&self) -> Option<Lost> {
        self.held.lost()
    }

    /// See [`Held::check`].
    pub fn check(&self) -> Result<()> {
        self.held.check()
    }

    /// Stops the renewals, releases now and reports whether this owner
    /// still held the lock.
    pub async fn release(mut self) -> Result<bool> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(false);
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let lease = &self.held.lease;
        self.held
            .lock
            .release(&lease.token)
            .run_async(&mut self.con)
            .await
    }
}

impl Drop for AsyncLockGuard {
    fn drop(&mut self) {
        // Dropping the sender (or sending `true`) has the task release the
        // lock; without a runtime left, the lease bounds it.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
    }
}

/// The renewal task: every lease/3 an extend, until told to stop (and
/// perhaps release) or the lease is lost.
async fn renew(
    mut renewals: Renewals,
    mut con: AsyncConnection,
    lost: watch::Sender<Option<Lost>>,
    mut stop: oneshot::Receiver<bool>,
) {
    loop {
        match tokio::time::timeout(renewals.period(), &mut stop).await {
            Ok(release) => {
                // A dropped sender (the guard dropped) releases too.
                if release.unwrap_or(true) {
                    let _ = renewals.release().run_async(&mut con).await;
                }
                return;
            }
            Err(_) => {
                let result = renewals.extend().run_async(&mut con).await;
                if let Some(lease_lost) = renewals.after(result) {
                    let _ = lost.send(Some(lease_lost));
                    // Wait for the guard to go, keeping the flag up.
                    let _ = stop.await;
                    return;
                }
            }
        }
    }
}

impl Lock {
    /// Runs `critical` while holding the lock (acquired as
    /// [`Lock::acquire`] does, renewed every lease/3), then releases it.
    /// `critical` gets a [`Held`]: the fencing token to pass on, and the
    /// loss signal to check or race against. Returns its output, or
    /// [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) when the lease
    /// was lost while it ran (its output is dropped: it ran without the
    /// lock for a while). A failed release is not an error (the lease
    /// bounds it).
    pub async fn with_lock<T, F, Fut>(
        &self,
        con: &AsyncConnection,
        timeout: std::time::Duration,
        critical: F,
    ) -> Result<T>
    where
        F: FnOnce(Held) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = AsyncLockGuard::acquire(self, con, timeout).await?;
        let out = critical(guard.held()).await;
        let lost = guard.held.check();
        let _ = guard.release().await;
        lost.map(|_| out)
    }
}
