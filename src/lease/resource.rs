//! [`Leasable`]: what a guard holds — a lock, a semaphore, or one side of
//! a read-write lock — and the operations it runs on it (acquire, renew,
//! release), behind a sealed trait so that the set stays the crate's.

use std::time::Duration;

use crate::core::Op;

/// A resource a [`Guard`](super::Guard) or an
/// [`AsyncGuard`](super::AsyncGuard) can hold: a
/// [`Lock`](crate::lock::Lock), a [`Semaphore`](crate::semaphore::Semaphore),
/// or a side of an [`RwLock`](crate::rwlock::RwLock)
/// ([`RwLock::reading`](crate::rwlock::RwLock::reading),
/// [`RwLock::writing`](crate::rwlock::RwLock::writing)). Implemented by
/// the crate only.
pub trait Leasable: Resource {}

impl<R: Resource> Leasable for R {}

/// The operations a guard runs (crate-private: the trait is sealed).
pub trait Resource: Clone + Send + Sync + std::fmt::Debug + 'static {
    /// What an acquire returns (a lease, a permit).
    type Lease: Clone + Send + Sync + std::fmt::Debug + 'static;

    /// The key a loss is reported with.
    fn key(&self) -> &str;

    /// The lease every holder gets.
    fn lease(&self) -> Duration;

    /// A blocking acquire until `timeout`.
    fn acquire(&self, timeout: Duration) -> Op<Self::Lease>;

    /// A fresh lease of `lease` from now; `false` when the lease was lost.
    fn extend(&self, lease: &Self::Lease, duration: Duration) -> Op<bool>;

    /// Gives the lease back; `Some(false)` when it was lost already, `None`
    /// when a resend after a lost reply found it given back (see
    /// [`Lock::release`](crate::lock::Lock::release)).
    fn release(&self, lease: &Self::Lease) -> Op<Option<bool>>;

    /// The holder's token.
    fn token(lease: &Self::Lease) -> &str;

    /// The lease's fencing token (0: the resource hands out none).
    fn fence(_lease: &Self::Lease) -> u64 {
        0
    }
}
