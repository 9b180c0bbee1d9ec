//! [`AsyncGuard`]: the async guard of any [`Leasable`] resource, and its
//! scoped form [`AsyncGuard::hold`]. A tokio task (on a clone of the
//! [`AsyncConnection`]) extends the lease every lease/3 while it is held;
//! it stops when the guard is released or dropped, and at the first
//! renewal that finds the lease no longer the guard's, or when renewals
//! failed until the lease had run out. The holder learns of a loss through
//! [`Held`]: a flag to check, and a future to `select!` on.

use std::future::Future;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::Leasable;
use super::guard::{Holding, Lost, Renewals};
use crate::core::{AsyncConnection, Request};
use crate::error::Result;
use crate::lock::Lock;

/// What a holder sees of its lease while an [`AsyncGuard`] holds it: the
/// lease, and whether it was lost. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Held<R: Leasable> {
    holding: Holding<R>,
    lost: watch::Receiver<Option<Lost>>,
}

impl<R: Leasable> Held<R> {
    /// The key the lease is held on.
    pub fn key(&self) -> &str {
        self.holding.resource.key()
    }

    /// The lease (a lock's [`Lease`](crate::lock::Lease), a
    /// [`Permit`](crate::semaphore::Permit), an
    /// [`RwLease`](crate::rwlock::RwLease)).
    pub fn lease(&self) -> &R::Lease {
        &self.holding.lease
    }

    /// The holder's token.
    pub fn token(&self) -> &str {
        self.holding.token()
    }

    /// The lost lease: once a renewal found it lost, or once the lease ran
    /// out since the last confirmed renewal was sent
    /// ([`LostReason::Expired`](super::LostReason::Expired), known at
    /// once, without waiting for the next renewal).
    pub fn lost(&self) -> Option<Lost> {
        self.holding.lost(self.lost.borrow().clone())
    }

    /// How long the lease lasts at least, as far as this holder knows
    /// (zero once it was lost).
    pub fn remaining(&self) -> Duration {
        self.holding.remaining(self.lost.borrow().as_ref())
    }

    /// `Ok` while the lease is held as far as this holder knows: no renewal
    /// found it lost, and the lease has not run out since the last
    /// confirmed renewal (a holder held up for longer than the lease
    /// learns it here at once);
    /// [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) otherwise.
    /// Check it before acting on what the lease protects.
    pub fn check(&self) -> Result<()> {
        self.holding.check(self.lost.borrow().clone())
    }

    /// Resolves when the lease is lost (never, while it is held): race the
    /// critical section against it with `tokio::select!`.
    pub async fn lost_signal(&self) -> Lost {
        let mut rx = self.lost.clone();
        loop {
            if let Some(lost) = rx.borrow_and_update().clone() {
                return lost;
            }
            if let Some(lost) = self.holding.lost(None) {
                return lost;
            }
            // A renewal's news, or the deadline, whichever comes first.
            let left = self.holding.deadline.left();
            if let Ok(Err(_)) = tokio::time::timeout(left, rx.changed()).await {
                // The renewals ended without a loss (released).
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Held<Lock> {
    /// The fencing token of this acquire: pass it to the resource you
    /// protect.
    pub fn fence(&self) -> u64 {
        self.holding.lease.fence
    }
}

/// Holds a lease of `R` (a lock, a semaphore permit, a read or write
/// lease) until released or dropped, renewing it every lease/3 in a tokio
/// task. Dropping it has the task release the lease (only if this holder
/// still has it); [`AsyncGuard::release`] does it now and reports the
/// outcome.
///
/// Cancel-safe: [`AsyncGuard::acquire`] dropped at any await leaves
/// nothing held (the acquire's undo releases it, see
/// [`Op::undo_on_cancel`](crate::Op::undo_on_cancel)); the release is the
/// task's, so [`AsyncGuard::release`] dropped before its reply came still
/// releases; a guard dropped anywhere has the task release.
#[derive(Debug)]
pub struct AsyncGuard<R: Leasable> {
    held: Held<R>,
    con: AsyncConnection,
    /// Tells the task to stop and release the lease on its way out (a
    /// dropped sender too).
    stop: Option<oneshot::Sender<Stop>>,
}

/// What the renewal task is told when the guard goes: release the lease,
/// and send the release's outcome back (to [`AsyncGuard::release`]) or
/// not (the guard was dropped).
#[derive(Debug)]
struct Stop(Option<oneshot::Sender<Result<Option<bool>>>>);

impl<R: Leasable> AsyncGuard<R> {
    /// Waits for `resource` as its `acquire(timeout)` does (on a clone of
    /// `con`) and starts the renewals. Call it inside a tokio runtime.
    /// Cancel-safe: dropped at any await, it leaves nothing held and no
    /// subscription behind (a spawned task releases what the acquire may
    /// have taken).
    pub async fn acquire(resource: &R, con: &AsyncConnection, timeout: Duration) -> Result<Self> {
        let con = con.clone();
        let lease = resource.acquire(timeout).run_async(&con).await?;
        let (lost_tx, lost) = watch::channel(None);
        let (stop, stopped) = oneshot::channel();
        let renewals = Renewals::new(resource.clone(), lease);
        let holding = renewals.holding();
        tokio::spawn(renew(renewals, con.clone(), lost_tx, stopped));
        Ok(Self {
            held: Held { holding, lost },
            con,
            stop: Some(stop),
        })
    }

    /// Runs `critical` while holding `resource` (acquired as
    /// [`AsyncGuard::acquire`] does, renewed every lease/3), then releases
    /// it. `critical` gets a [`Held`]: the lease (a lock's fencing token to
    /// pass on), and the loss signal to check or race against. Returns its
    /// output, or [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) when
    /// the lease was lost while it ran (its output is dropped: it ran
    /// without the lease for a while). A failed release is not an error
    /// (the lease bounds it).
    pub async fn hold<T, F, Fut>(
        resource: &R,
        con: &AsyncConnection,
        timeout: Duration,
        critical: F,
    ) -> Result<T>
    where
        F: FnOnce(Held<R>) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = Self::acquire(resource, con, timeout).await?;
        let out = critical(guard.held()).await;
        let lost = guard.held.check();
        let _ = guard.release().await;
        lost.map(|_| out)
    }

    /// What the holder sees: the lease and whether it was lost.
    pub fn held(&self) -> Held<R> {
        self.held.clone()
    }

    /// The lease.
    pub fn lease(&self) -> &R::Lease {
        self.held.lease()
    }

    /// The holder's token.
    pub fn token(&self) -> &str {
        self.held.token()
    }

    /// The lost lease, once a renewal found it lost.
    pub fn lost(&self) -> Option<Lost> {
        self.held.lost()
    }

    /// See [`Held::check`].
    pub fn check(&self) -> Result<()> {
        self.held.check()
    }

    /// Stops the renewals, releases now and reports whether this holder
    /// still had the lease (`None`: not known, the release was sent again
    /// after its reply was lost; see [`Lock::release`](crate::lock::Lock::release)).
    ///
    /// Cancel-safe: the release runs in the guard's renewal task, which
    /// goes on when this future is dropped (at any await) and releases all
    /// the same; the guard stays armed until the release's reply came.
    pub async fn release(mut self) -> Result<Option<bool>> {
        let (reply, outcome) = oneshot::channel();
        if let Some(stop) = self.stop.take()
            && stop.send(Stop(Some(reply))).is_ok()
            && let Ok(result) = outcome.await
        {
            return result;
        }
        // The task is gone (its runtime shut down): release from here.
        self.held.holding.release().run_async(&self.con).await
    }
}

impl AsyncGuard<Lock> {
    /// The fencing token of this acquire.
    pub fn fence(&self) -> u64 {
        self.held.fence()
    }
}

impl<R: Leasable> Drop for AsyncGuard<R> {
    fn drop(&mut self) {
        // Dropping the sender (or sending a stop) has the task release the
        // lease; without a runtime left, the lease bounds it.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop(None));
        }
    }
}

/// The renewal task: every lease/3 an extend, until told to stop (and
/// release, replying with the outcome when asked) or the lease is lost.
async fn renew<R: Leasable>(
    mut renewals: Renewals<R>,
    con: AsyncConnection,
    lost: watch::Sender<Option<Lost>>,
    mut stop: oneshot::Receiver<Stop>,
) {
    loop {
        match tokio::time::timeout(renewals.period(), &mut stop).await {
            // A stop, or a dropped sender (the guard dropped): release.
            Ok(told) => {
                let result = renewals.release().run_async(&con).await;
                if let Ok(Stop(Some(reply))) = told {
                    let _ = reply.send(result);
                }
                return;
            }
            Err(_) => {
                let result = renewals.extend().run_async(&con).await;
                if let Some(lease_lost) = renewals.after(result) {
                    let _ = lost.send(Some(lease_lost));
                    // Wait for the guard to go, keeping the flag up; a
                    // release asked for still runs (and says it was lost).
                    if let Ok(Stop(Some(reply))) = stop.await {
                        let _ = reply.send(renewals.release().run_async(&con).await);
                    }
                    return;
                }
            }
        }
    }
}
