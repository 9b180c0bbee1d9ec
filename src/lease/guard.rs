//! [`Guard`]: the sync guard of any [`Leasable`] resource. It holds the
//! lease until dropped or released, and a renewal thread of its own (with a
//! connection of its own, [`Connection::try_clone`]) extends the lease
//! every lease/3 while it is held. The thread stops when the guard is
//! dropped or released, and at the first renewal that finds the lease no
//! longer the guard's (the extend scripts compare the token, so a lease
//! someone else holds is never renewed), or when renewals failed until the
//! lease had run out; the guard then reports the loss ([`Guard::lost`],
//! [`Guard::check`]).
//!
//! What both guards share lives here too: the renewals' bookkeeping
//! ([`Renewals`]: the period, the extend, when the lease counts as lost)
//! and the error a loss gives.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Leasable;
use crate::core::{Connection, Op, Request};
use crate::error::{ErrorKind, Result};
use crate::lock::Lock;

/// A lease that a guard lost while it held it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lost {
    /// The fencing token that was lost (a lock's; 0 for a semaphore permit
    /// or a read-write lock's lease, which hand out none).
    pub fence: u64,
    /// How it was lost.
    pub reason: LostReason,
}

/// Why a guard's lease was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LostReason {
    /// A renewal found the lease gone or held with another token (deleted,
    /// expired, taken over).
    NotOwned,
    /// Renewals failed (the server unreachable) until the lease had run out.
    Unrenewed,
    /// The lease ran out before a renewal confirmed it again: the holder's
    /// process or its renewals were held up (frozen, paused, starved) for
    /// longer than the lease. The holder's own check tells it at once,
    /// from the time since the last confirmed renewal was sent, without
    /// waiting for the next renewal to find the lease gone.
    Expired,
}

/// When a lease runs out unless a renewal confirms it again: the instant
/// the last confirmed renewal was sent (the acquire: when its reply came)
/// plus the lease. Shared by the renewals and the holder's checks; once a
/// check found it passed, it stays passed (a renewal that succeeds later
/// does not revive the lease: the holder may have stopped trusting it).
#[derive(Debug, Clone)]
pub(crate) struct Deadline {
    lease: Duration,
    /// The last confirmation, and whether a check found the lease run out.
    state: Arc<Mutex<(Instant, bool)>>,
}

impl Deadline {
    /// A lease of `lease` confirmed now.
    pub(crate) fn new(lease: Duration) -> Self {
        Self {
            lease,
            state: Arc::new(Mutex::new((Instant::now(), false))),
        }
    }

    /// A renewal sent at `sent` succeeded (unless the lease counts as run
    /// out already).
    fn confirm(&self, sent: Instant) {
        let mut s = self.state.lock().expect("lease deadline");
        if !s.1 {
            s.0 = s.0.max(sent);
        }
    }

    /// How long the lease has left (zero once it ran out); a lease found
    /// run out stays so.
    pub(crate) fn left(&self) -> Duration {
        let mut s = self.state.lock().expect("lease deadline");
        let left = (s.0 + self.lease).saturating_duration_since(Instant::now());
        s.1 |= left.is_zero();
        if s.1 { Duration::ZERO } else { left }
    }

    /// The loss of `fence`'s lease when it ran out.
    pub(crate) fn expired(&self, fence: u64) -> Option<Lost> {
        self.left().is_zero().then_some(Lost {
            fence,
            reason: LostReason::Expired,
        })
    }
}

/// What both guards' renewals share: the resource and the lease they
/// renew, every lease/3, and the lease's deadline.
pub(crate) struct Renewals<R: Leasable> {
    resource: R,
    lease: R::Lease,
    deadline: Deadline,
    /// When the renewal in flight was sent.
    sent: Instant,
}

impl<R: Leasable> Renewals<R> {
    /// The renewals of `lease`, acquired just now.
    pub(crate) fn new(resource: R, lease: R::Lease) -> Self {
        Self {
            deadline: Deadline::new(resource.lease()),
            resource,
            lease,
            sent: Instant::now(),
        }
    }

    /// What the holder knows of the lease: the resource, the lease and its
    /// deadline (shared with these renewals).
    pub(crate) fn holding(&self) -> Holding<R> {
        Holding {
            resource: self.resource.clone(),
            lease: self.lease.clone(),
            deadline: self.deadline.clone(),
        }
    }

    /// How long to wait before the next renewal.
    pub(crate) fn period(&self) -> Duration {
        self.resource.lease() / 3
    }

    /// One renewal, sent now: a fresh lease, if the guard's token still
    /// holds it.
    pub(crate) fn extend(&mut self) -> Op<bool> {
        self.sent = Instant::now();
        self.resource.extend(&self.lease, self.resource.lease())
    }

    /// The release when the guard goes (the task's; the thread's guard
    /// releases itself).
    #[cfg(feature = "tokio")]
    pub(crate) fn release(&self) -> Op<Option<bool>> {
        self.resource.release(&self.lease)
    }

    /// Files the outcome of a renewal: the lost lease when it is no longer
    /// the guard's, or when renewals failed until the lease had run out;
    /// `None` while it is held (a failed renewal is tried again at the
    /// next period).
    pub(crate) fn after(&mut self, result: Result<bool>) -> Option<Lost> {
        let reason = match result {
            Ok(true) => {
                self.deadline.confirm(self.sent);
                // A holder's check may have found it run out meanwhile.
                return self.deadline.expired(R::fence(&self.lease));
            }
            Ok(false) => LostReason::NotOwned,
            Err(_) if self.deadline.left().is_zero() => LostReason::Unrenewed,
            Err(_) => return None,
        };
        Some(Lost {
            fence: R::fence(&self.lease),
            reason,
        })
    }
}

/// What both guards' holders know of their lease: the resource, the lease,
/// and its deadline (which the renewals move on). The news of a renewal
/// that found the lease lost (`found`) is each guard's own.
#[derive(Debug, Clone)]
pub(crate) struct Holding<R: Leasable> {
    pub(crate) resource: R,
    pub(crate) lease: R::Lease,
    pub(crate) deadline: Deadline,
}

impl<R: Leasable> Holding<R> {
    /// The holder's token.
    pub(crate) fn token(&self) -> &str {
        R::token(&self.lease)
    }

    /// The lost lease: `found`, or the loss once the lease ran out since
    /// the last confirmed renewal was sent ([`LostReason::Expired`]).
    pub(crate) fn lost(&self, found: Option<Lost>) -> Option<Lost> {
        found.or_else(|| self.deadline.expired(R::fence(&self.lease)))
    }

    /// How long the lease lasts at least: zero once `found` lost, else
    /// what the deadline has left.
    pub(crate) fn remaining(&self, found: Option<&Lost>) -> Duration {
        match found {
            Some(_) => Duration::ZERO,
            None => self.deadline.left(),
        }
    }

    /// `Ok` while neither `found` nor the deadline says the lease was
    /// lost; [`ErrorKind::LockLost`] otherwise.
    pub(crate) fn check(&self, found: Option<Lost>) -> Result<()> {
        match self.lost(found) {
            Some(lost) => Err(ErrorKind::LockLost {
                key: self.resource.key().to_string(),
                fence: lost.fence,
            }
            .into()),
            None => Ok(()),
        }
    }

    /// The release of the lease.
    pub(crate) fn release(&self) -> Op<Option<bool>> {
        self.resource.release(&self.lease)
    }
}

#[derive(Default)]
struct State {
    stop: bool,
    lost: Option<Lost>,
}

/// The renewal thread and what it shares with the guard.
struct Renewer {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Renewer {
    fn start<R: Leasable>(mut renewals: Renewals<R>, mut con: Connection) -> std::io::Result<Self> {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("lease-renewal".into())
            .spawn(move || {
                let (state, wake) = &*theirs;
                loop {
                    let s = state.lock().expect("renewal state");
                    let (s, _) = wake
                        .wait_timeout_while(s, renewals.period(), |s| !s.stop)
                        .expect("renewal state");
                    if s.stop {
                        return;
                    }
                    drop(s);
                    let result = renewals.extend().run(&mut con);
                    if let Some(lost) = renewals.after(result) {
                        state.lock().expect("renewal state").lost = Some(lost);
                        return;
                    }
                }
            })?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    fn lost(&self) -> Option<Lost> {
        self.shared.0.lock().expect("renewal state").lost.clone()
    }

    /// Stops the thread and waits for it (a renewal in flight finishes).
    fn stop(&mut self) {
        self.shared.0.lock().expect("renewal state").stop = true;
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Holds a lease of `R` (a lock, a semaphore permit, a read or write
/// lease) until dropped or [released](Guard::release), renewing it every
/// lease/3 on a thread of its own. Dropping it releases the lease only if
/// this holder still has it; errors on drop are ignored (the lease bounds
/// how long a lost release can block others).
pub struct Guard<'a, R: Leasable> {
    holding: Holding<R>,
    con: &'a mut Connection,
    renewer: Renewer,
    released: bool,
}

impl<R: Leasable> std::fmt::Debug for Guard<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("key", &self.holding.resource.key())
            .field("lease", &self.holding.lease)
            .finish_non_exhaustive()
    }
}

impl<'a, R: Leasable> Guard<'a, R> {
    /// Blocking acquire of `resource` on a sync connection (as its
    /// `acquire(timeout)`), returning a guard that renews the lease every
    /// lease/3 until it is dropped or released. The guard borrows the
    /// connection (use [`Guard::conn`] meanwhile); the renewal thread opens
    /// a connection of its own first ([`Connection::try_clone`]).
    pub fn acquire(resource: &R, con: &'a mut Connection, timeout: Duration) -> Result<Self> {
        let renewals = con.try_clone()?;
        let lease = resource.acquire(timeout).run(con)?;
        let renewing = Renewals::new(resource.clone(), lease.clone());
        let holding = renewing.holding();
        match Renewer::start(renewing, renewals) {
            Ok(renewer) => Ok(Guard {
                holding,
                con,
                renewer,
                released: false,
            }),
            Err(e) => {
                let _ = resource.release(&lease).run(con);
                Err(crate::Error::from(redis::RedisError::from(e)))
            }
        }
    }

    /// Runs `critical` while holding `resource` (acquired as
    /// [`Guard::acquire`] does, renewed every lease/3), then releases it:
    /// the sync form of [`AsyncGuard::hold`](crate::lease::AsyncGuard::hold).
    /// `critical` gets the guard (its [`conn`](Guard::conn) for the work,
    /// its [`check`](Guard::check) before acting on what the lease
    /// protects). Returns its output, or
    /// [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) when the lease
    /// was lost while it ran. A failed release is not an error (the lease
    /// bounds it).
    pub fn hold<T>(
        resource: &R,
        con: &'a mut Connection,
        timeout: Duration,
        critical: impl FnOnce(&mut Guard<'a, R>) -> T,
    ) -> Result<T> {
        let mut guard = Self::acquire(resource, con, timeout)?;
        let out = critical(&mut guard);
        let lost = guard.check();
        let _ = guard.release();
        lost.map(|_| out)
    }

    /// The connection, for work under the lease.
    pub fn conn(&mut self) -> &mut Connection {
        self.con
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
    /// out since the last confirmed renewal was sent ([`LostReason::Expired`],
    /// known at once, without waiting for the next renewal).
    pub fn lost(&self) -> Option<Lost> {
        self.holding.lost(self.renewer.lost())
    }

    /// How long the lease lasts at least, as far as this holder knows (the
    /// time since the last confirmed renewal was sent, taken from the
    /// lease); zero once it was lost.
    pub fn remaining(&self) -> Duration {
        self.holding.remaining(self.renewer.lost().as_ref())
    }

    /// `Ok` while the lease is held as far as this holder knows: no renewal
    /// found it lost, and the lease has not run out since the last
    /// confirmed renewal (a holder that was frozen for longer than the
    /// lease learns it here at once);
    /// [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) otherwise. Check
    /// it before acting on what the lease protects.
    pub fn check(&self) -> Result<()> {
        self.holding.check(self.renewer.lost())
    }

    /// Stops the renewals, releases now and reports whether this holder
    /// still had the lease (`None`: not known, the release was sent again
    /// after its reply was lost; see [`Lock::release`](crate::lock::Lock::release)).
    pub fn release(mut self) -> Result<Option<bool>> {
        self.renewer.stop();
        self.released = true;
        self.holding.release().run(self.con)
    }
}

impl Guard<'_, Lock> {
    /// The fencing token of this acquire: pass it to the resource you
    /// protect.
    pub fn fence(&self) -> u64 {
        self.holding.lease.fence
    }
}

impl<R: Leasable> Drop for Guard<'_, R> {
    fn drop(&mut self) {
        self.renewer.stop();
        if !self.released {
            let _ = self.holding.release().run(self.con);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_runs_out_with_its_lease_and_stays_run_out() {
        let lease = Duration::from_secs(60);
        let d = Deadline::new(lease);
        assert!(d.expired(7).is_none() && d.left() > lease / 2);
        // The last confirmation was sent longer than a lease ago.
        let long_ago = Instant::now() - lease - Duration::from_secs(1);
        d.state.lock().unwrap().0 = long_ago;
        let lost = d.expired(7).expect("run out");
        assert_eq!((lost.fence, lost.reason), (7, LostReason::Expired));
        d.confirm(Instant::now());
        assert!(d.expired(7).is_some(), "a later renewal does not revive it");
        assert_eq!(d.left(), Duration::ZERO);
        // A confirmation moves an open deadline on, never back.
        let d = Deadline::new(lease);
        d.confirm(long_ago);
        assert!(d.left() > lease / 2);
    }
}
