//! [`Leasable`]: what a guard holds — a lock, a semaphore, or one side of
//! a read-write lock — and what its acquires and guards run on it (the
//! attempts of an acquire, renew, release), behind a sealed trait so that
//! the set stays the crate's.

use std::time::Duration;

use super::leasing::{self, Leased};
use super::new_token;
use super::wait::Attempt;
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

/// A leased resource as its acquires and guards see it (crate-private: the
/// trait is sealed): [`leasing::try_once`] and [`leasing::wait_for`] make
/// every acquire of it from its attempts and its release by token; a guard
/// acquires, renews and releases with the rest.
pub trait Resource: Clone + Send + Sync + std::fmt::Debug + 'static {
    /// What an acquire returns (a lease, a permit).
    type Lease: Clone + Send + Sync + std::fmt::Debug + 'static;

    /// Its settings, checked.
    fn leased(&self) -> &Leased;

    /// The attempts of one acquire: each one acquire call with a token,
    /// what it got or busy; a refused one keeps a place in the queue for
    /// the given ms (0: none).
    fn attempts(&self) -> impl FnMut(&str, i64) -> Op<Attempt<Self::Lease>> + Send + 'static;

    /// The release of whatever `token` holds of it ([`leasing::released`]).
    fn release_by(&self, token: &str) -> Op<Option<bool>>;

    /// A fresh lease of `lease` from now; `false` when the lease was lost.
    fn extend(&self, lease: &Self::Lease, duration: Duration) -> Op<bool>;

    /// The holder's token.
    fn token(lease: &Self::Lease) -> &str;

    /// The lease's fencing token (0: the resource hands out none).
    fn fence(_lease: &Self::Lease) -> u64 {
        0
    }

    /// Gives the lease back; `Some(false)` when it was lost already, `None`
    /// when a resend after a lost reply found it given back (see
    /// [`Lock::release`](crate::lock::Lock::release)). By default the
    /// release by its token.
    fn release(&self, lease: &Self::Lease) -> Op<Option<bool>> {
        self.release_by(Self::token(lease))
    }

    /// The key a loss is reported with.
    fn key(&self) -> &str {
        &self.leased().key
    }

    /// The lease every holder gets.
    fn lease(&self) -> Duration {
        self.leased().lease()
    }

    /// A blocking acquire with a fresh token until `timeout`.
    fn acquire(&self, timeout: Duration) -> Op<Self::Lease> {
        leasing::wait_for(self, &new_token(), timeout)
    }
}
