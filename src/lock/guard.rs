//! [`LockGuard`]: the sync guard. It holds the lock until dropped or
//! released, and a renewal thread of its own (with a connection of its own,
//! [`Connection::try_clone`]) extends the lease every lease/3 while it is
//! held. The thread stops when the guard is dropped or released, and at the
//! first renewal that finds the lock no longer owned by the guard's token
//! (the extend script compares it, so a lock someone else holds is never
//! renewed), or when renewals failed until the lease had run out; the guard
//! then reports the loss ([`LockGuard::lost`], [`LockGuard::check`]).
//!
//! What both guards share lives here too: the renewals' bookkeeping
//! ([`Renewals`]: the period, the extend, when the lease counts as lost)
//! and the holder's accessors (`holder_accessors!`).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Lease, Lock};
use crate::core::{Connection, Op, Request};
use crate::error::{ErrorKind, Result};

/// A lease that a guard lost while it held it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lost {
    /// The fencing token that was lost.
    pub fence: u64,
    pub reason: LostReason,
}

/// Why a guard's lease was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LostReason {
    /// A renewal found the lock gone or held with another token (deleted,
    /// expired, taken over).
    NotOwned,
    /// Renewals failed (the server unreachable) until the lease had run out.
    Unrenewed,
}

/// What both guards' renewals share: the lock and the lease they renew,
/// every lease/3, and when the last renewal succeeded.
pub(crate) struct Renewals {
    lock: Lock,
    lease: Lease,
    renewed: Instant,
}

impl Renewals {
    pub(crate) fn new(lock: Lock, lease: Lease) -> Self {
        Self {
            lock,
            lease,
            renewed: Instant::now(),
        }
    }

    /// How long to wait before the next renewal.
    pub(crate) fn period(&self) -> Duration {
        self.lock.lease() / 3
    }

    /// One renewal: a fresh lease, if the guard's token still owns the lock.
    pub(crate) fn extend(&self) -> Op<bool> {
        self.lock.extend(&self.lease.token, self.lock.lease())
    }

    /// The release when the guard goes (the task's; the thread's guard
    /// releases itself).
    #[cfg(feature = "tokio")]
    pub(crate) fn release(&self) -> Op<bool> {
        self.lock.release(&self.lease.token)
    }

    /// Files the outcome of a renewal: the lost lease when the lock is no
    /// longer the guard's, or when renewals failed until the lease had run
    /// out; `None` while it is held (a failed renewal is tried again at
    /// the next period).
    pub(crate) fn after(&mut self, result: Result<bool>) -> Option<Lost> {
        let reason = match result {
            Ok(true) => {
                self.renewed = Instant::now();
                return None;
            }
            Ok(false) => LostReason::NotOwned,
            Err(_) if self.renewed.elapsed() >= self.lock.lease() => LostReason::Unrenewed,
            Err(_) => return None,
        };
        Some(Lost {
            fence: self.lease.fence,
            reason,
        })
    }
}

/// The error a lost lease gives.
pub(crate) fn lost_error(lock: &Lock, lost: &Lost) -> crate::Error {
    ErrorKind::LockLost {
        key: lock.key().to_string(),
        fence: lost.fence,
    }
    .into()
}

/// What a holder reads of a lease it holds, on a type with the fields
/// `lock` and `lease` and a method `lost(&self) -> Option<Lost>`: `lease`,
/// `fence`, `token` and `check`.
macro_rules! holder_accessors {
    () => {
        /// The lease: owner token and fencing token.
        pub fn lease(&self) -> &Lease {
            &self.lease
        }

        /// The fencing token of this acquire.
        pub fn fence(&self) -> u64 {
            self.lease.fence
        }

        /// The owner token.
        pub fn token(&self) -> &str {
            &self.lease.token
        }

        /// `Ok` while the lock is held as far as the renewals know;
        /// [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) (with the
        /// lost fencing token) once it was lost. Check it before acting on
        /// what the lock protects.
        pub fn check(&self) -> Result<()> {
            match self.lost() {
                Some(lost) => Err($crate::lock::guard::lost_error(&self.lock, &lost)),
                None => Ok(()),
            }
        }
    };
}
#[cfg(feature = "tokio")]
pub(crate) use holder_accessors;

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
    fn start(mut renewals: Renewals, mut con: Connection) -> std::io::Result<Self> {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("lock-renewal".into())
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

/// Holds a lock until dropped or [released](LockGuard::release), renewing
/// its lease every lease/3 on a thread of its own. Dropping it releases the
/// lock only if this owner still holds it; errors on drop are ignored (the
/// lease bounds how long a lost release can block others).
pub struct LockGuard<'a> {
    lock: &'a Lock,
    con: &'a mut Connection,
    lease: Lease,
    renewer: Renewer,
    released: bool,
}

impl std::fmt::Debug for LockGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("key", &self.lock.key())
            .field("fence", &self.lease.fence)
            .finish_non_exhaustive()
    }
}

impl Lock {
    /// Blocking acquire on a sync connection (as [`Lock::acquire`]),
    /// returning a guard that renews the lease every lease/3 until it is
    /// dropped or released. The guard borrows the connection (use
    /// [`LockGuard::conn`] meanwhile); the renewal thread opens a connection
    /// of its own first ([`Connection::try_clone`]).
    pub fn guard<'a>(
        &'a self,
        con: &'a mut Connection,
        timeout: std::time::Duration,
    ) -> Result<LockGuard<'a>> {
        let renewals = con.try_clone()?;
        let lease = self.acquire(timeout).run(con)?;
        match Renewer::start(Renewals::new(self.clone(), lease.clone()), renewals) {
            Ok(renewer) => Ok(LockGuard {
                lock: self,
                con,
                lease,
                renewer,
                released: false,
            }),
            Err(e) => {
                let _ = self.release(&lease.token).run(con);
                Err(crate::Error::from(redis::RedisError::from(e)))
            }
        }
    }
}

impl LockGuard<'_> {
    /// The connection, for work under the lock.
    pub fn conn(&mut self) -> &mut Connection {
        self.con
    }

    holder_accessors!();

    /// The lost lease, once a renewal found the lock lost.
    pub fn lost(&self) -> Option<Lost> {
        self.renewer.lost()
    }

    /// Stops the renewals, releases now and reports whether this owner
    /// still held the lock.
    pub fn release(mut self) -> Result<bool> {
        self.renewer.stop();
        self.released = true;
        self.lock.release(&self.lease.token).run(self.con)
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.renewer.stop();
        if !self.released {
            let _ = self.lock.release(&self.lease.token).run(self.con);
        }
    }
}
