//! A read-write lock with leases (`lua/rwlock/`): many readers or one
//! writer, and a waiting writer keeps new readers out, so no writer starves
//! behind a stream of readers.
//!
//! Keys, all with the hash tag `{<name>}` (one slot, so it runs unchanged
//! on Redis Cluster): `<prefix>{<name>}` holds the writer's token with its
//! lease as TTL; `<prefix>{<name>}:readers` is a sorted set of reader
//! tokens scored by the end of their leases (server clock);
//! `<prefix>{<name>}:intents` one of the writers waiting for the readers to
//! leave, scored by the end of their intent; and `<prefix>{<name>}:queue`
//! with `<prefix>{<name>}:places` the waiters of either role in arrival
//! order, each with the end of its place. A refused writer records its
//! intent, and while one is recorded a new reader is refused (a reader
//! that was already waiting when the writer came goes first); every waiter
//! renews its place (a writer its intent too) with each attempt, at least
//! every lease/2, and gives it up when it gets the lock or gives up, so a
//! waiter that crashed holds the others back for at most one lease. Every
//! lease is per holder: a holder that crashed frees its share when its
//! lease ends.
//!
//! Waiters are woken one at a time, as the lock's ([`WaitMode`]): a
//! writer's release, and the last reader's, publish on the shard channel
//! `<prefix>{<name>}:wake` the token of the first live waiter when it
//! waits to write, or else the tokens of the readers at the head of the
//! queue (up to the first writer), and only they try again.
//!
//! A lease held while its holder works is best held by a guard
//! ([`Guard`](crate::lease::Guard) sync,
//! [`AsyncGuard`](crate::lease::AsyncGuard) async, of [`RwLock::reading`]
//! or [`RwLock::writing`]; see [`lease`](crate::lease)):
//! it renews the lease every lease/3, reports its loss, and gives it back
//! when dropped.
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::rwlock::RwLock;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let prices = RwLock::new("prices", Duration::from_secs(10))?;
//! let read = prices.read(Duration::from_secs(1)).run(&mut con)?; // shared with other readers
//! prices.release(&read).run(&mut con)?;
//! let write = prices.write(Duration::from_secs(5)).run(&mut con)?; // alone
//! prices.release(&write).run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let prices = RwLock::new("prices", Duration::from_secs(10))?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let write = prices.try_write().run_async(&con).await?; // Err(LockBusy) when held
//! prices.release(&write).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```

mod contract;

use std::time::Duration;

use serde::Serialize;

use crate::core::{Op, setters};
use crate::error::{ErrorKind, Result};
use crate::lease::leasing::{self, Leased, Leasing, leased_accessors, leasing_setters};
use crate::lease::wait::Attempt;
use crate::lease::{Resource, WaitMode, new_token};
use crate::scripts;

pub(crate) use contract::contract;

/// The value of [`RwLock::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "redis:rwlock:";

impl RwLock {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}

/// The longest lease (the `lease_ms` range of the scripts' headers).
pub(crate) const MAX_LEASE_MS: u64 = scripts::rwlock::WRITE_ACQUIRE_LEASE_MS_MAX as u64;

/// Which lease a holder has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Role {
    /// A shared read lease.
    Read,
    /// The exclusive write lease.
    Write,
}

/// A read or write lease: the holder's token and its role (release and
/// extend take it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RwLease {
    /// 32 lowercase hex digits, or the caller's own with `*_as`.
    pub token: String,
    /// Read or write.
    pub role: Role,
}

/// A named read-write lock: its keys, lease and wait mode. Cheap to clone;
/// holds no connection.
#[derive(Debug, Clone)]
pub struct RwLock {
    /// Its key is the writer's.
    leased: Leased,
    readers: String,
    intents: String,
}

/// Builds an [`RwLock`]: setters never fail, [`RwLockBuilder::build`]
/// checks.
#[derive(Debug, Clone)]
pub struct RwLockBuilder {
    leasing: Leasing,
}

impl RwLockBuilder {
    leasing_setters!(
        RwLock,
        "The lease of every reader and writer (default 30 s); also how long a waiting writer's intent keeps readers out without being renewed."
    );

    setters! {
        /// Whether a free lock goes to the waiters in arrival order
        /// (default `false`): a writer with a live waiter ahead of it (a
        /// reader or a writer) waits for it, as Redisson's fair locks do; a
        /// waiter that disappeared is skipped once its place (a third of the lease by default)
        /// has ended. Readers keep arrival order either way (a reader waits
        /// for the writers that came before it, and a new reader for any
        /// waiting writer). Without it a writer that comes while the lock
        /// is free takes it; either way a release wakes only the next
        /// waiter (a writer, or the readers at the head of the queue).
        fair(fair: bool) => leasing.fair;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<RwLock> {
        let leased = self.leasing.check("lock name", MAX_LEASE_MS)?;
        Ok(RwLock {
            readers: format!("{}:readers", leased.key),
            intents: format!("{}:intents", leased.key),
            leased,
        })
    }
}

impl RwLock {
    /// A builder for the read-write lock `name`.
    pub fn builder(name: &str) -> RwLockBuilder {
        RwLockBuilder {
            leasing: Leasing::new(name, DEFAULT_PREFIX),
        }
    }

    /// The read-write lock `name` (keys `redis:rwlock:{name}...`) with the
    /// given lease and notified waiting.
    pub fn new(name: &str, lease: Duration) -> Result<Self> {
        Self::builder(name).lease(lease).build()
    }

    /// The key of the writer's token.
    pub fn writer_key(&self) -> &str {
        &self.leased.key
    }

    /// The key of the readers (a sorted set).
    pub fn readers_key(&self) -> &str {
        &self.readers
    }

    /// The key of the waiting writers' intents (a sorted set).
    pub fn intents_key(&self) -> &str {
        &self.intents
    }

    leased_accessors!(
        "The lease of every holder.",
        "Whether a free lock goes to the waiters in arrival order."
    );

    /// One read attempt with a fresh token; [`ErrorKind::LockBusy`] while a
    /// writer holds the lock or waits for it.
    pub fn try_read(&self) -> Op<RwLease> {
        self.try_as(Role::Read, &new_token())
    }

    /// One write attempt with a fresh token; [`ErrorKind::LockBusy`] while
    /// anyone holds the lock (the attempt records no intent to wait).
    pub fn try_write(&self) -> Op<RwLease> {
        self.try_as(Role::Write, &new_token())
    }

    /// One attempt of `role` with the caller's own `token`; a token that
    /// already holds that lease (a retry whose reply was lost) keeps it,
    /// with a fresh lease. A refused single attempt takes no place in the
    /// queue (and a writer's records no intent).
    ///
    /// Cancel-safe, as every acquire of the lock ([`RwLock::try_read`],
    /// [`RwLock::try_write`], [`RwLock::read`], [`RwLock::write`],
    /// [`RwLock::wait_as`]): dropped at any await (`tokio::time::timeout`,
    /// `select!`, an aborted task), it leaves no lease, no writer's intent,
    /// no place in the queue and no subscription behind: a spawned task
    /// releases by `token` whatever it may have taken (see
    /// [the cancellation guide](crate::guide::cancellation)).
    pub fn try_as(&self, role: Role, token: &str) -> Op<RwLease> {
        leasing::try_once(&self.side(role), token, |key, retry_after_ms| {
            ErrorKind::LockBusy {
                key,
                retry_after_ms,
            }
        })
    }

    /// Waits for a read lease (woken when the writer leaves) until
    /// `timeout` ([`ErrorKind::LockTimeout`]).
    pub fn read(&self, timeout: Duration) -> Op<RwLease> {
        self.wait_as(Role::Read, &new_token(), timeout)
    }

    /// Waits for the write lease (woken when the last reader or the writer
    /// leaves); meanwhile new readers wait behind it.
    pub fn write(&self, timeout: Duration) -> Op<RwLease> {
        self.wait_as(Role::Write, &new_token(), timeout)
    }

    /// [`RwLock::read`] or [`RwLock::write`] with the caller's own token
    /// (cancel-safe: see [`RwLock::try_as`]). The waiter has a place in the
    /// lock's queue: a release wakes the next waiter only (a writer, or the
    /// readers at the head of the queue), and at the timeout the waiter
    /// gives its place (and a writer its intent) up.
    pub fn wait_as(&self, role: Role, token: &str, timeout: Duration) -> Op<RwLease> {
        leasing::wait_for(&self.side(role), token, timeout)
    }

    /// The release of `token`'s lease of `role` (and, for a writer, its
    /// intent; for either, its place in the queue).
    fn release_as(&self, role: Role, token: &str) -> Op<Option<bool>> {
        self.release(&RwLease {
            token: token.to_string(),
            role,
        })
    }

    /// One acquire call of `role`; a refused one keeps a place in the
    /// queue (a writer also its intent) for `place_ms` (0: none).
    fn attempt(&self, role: Role, token: &str, place_ms: i64) -> Op<Attempt<RwLease>> {
        let (w, r, i, q, p) = self.keys();
        let lease_ms = self.leased.lease_ms;
        let call = match role {
            Role::Read => scripts::rwlock::read_acquire(w, r, i, q, p, token, lease_ms, place_ms),
            Role::Write => {
                let fair = self.leased.fair;
                scripts::rwlock::write_acquire(w, r, i, q, p, token, lease_ms, place_ms, fair)
            }
        };
        let token = token.to_string();
        Op::script(call).map(move |reply| match reply {
            1 => Attempt::Got(RwLease { token, role }),
            r => Attempt::busy(r),
        })
    }

    /// The keys every acquire and release takes: writer, readers, intents,
    /// queue, places.
    fn keys(&self) -> (&str, &str, &str, &str, &str) {
        let l = &self.leased;
        (&l.key, &self.readers, &self.intents, &l.queue, &l.places)
    }

    /// Gives the lease back (and a place of the token in the queue up) and
    /// wakes the next waiter while the lock is free for it (a writer's
    /// release, or the last reader's: the first waiter when it waits to
    /// write, else the readers at the head of the queue): `Some(true)`; `Some(false)` when the token did
    /// not hold it (its lease had ended); `None` when the call was sent
    /// again after its reply was lost (a broken connection, a failover) and
    /// the resend found nothing to give back: the first attempt may have
    /// released it. Either way the token holds nothing now. Dropped at an
    /// await, it may or may not have run (the lease then ends by itself);
    /// run it again to be sure.
    pub fn release(&self, lease: &RwLease) -> Op<Option<bool>> {
        let (w, r, i, q, p) = self.keys();
        let (token, channel) = (&lease.token, &self.leased.channel);
        leasing::with_token(token, || {
            leasing::released(match lease.role {
                Role::Read => scripts::rwlock::read_release(w, r, i, q, p, token, channel),
                Role::Write => scripts::rwlock::write_release(w, r, i, q, p, token, channel),
            })
        })
    }

    /// Gives the lease a fresh `duration` from now; `false` when the token
    /// holds no live lease of its role. Dropped at an await, it may or may
    /// not have extended the lease, and leaves nothing else behind.
    pub fn extend(&self, lease: &RwLease, duration: Duration) -> Op<bool> {
        let token = &lease.token;
        leasing::held(
            leasing::extend_ms(token, duration, MAX_LEASE_MS).and_then(|ms| match lease.role {
                Role::Read => scripts::rwlock::read_extend(&self.readers, token, ms),
                Role::Write => scripts::rwlock::write_extend(&self.leased.key, token, ms),
            }),
        )
    }
}

/// One side of a read-write lock, for a guard: [`RwLock::reading`] or
/// [`RwLock::writing`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Access {
    lock: RwLock,
    role: Role,
}

impl Access {
    /// The lock.
    pub fn lock(&self) -> &RwLock {
        &self.lock
    }

    /// Which lease a guard of it holds.
    pub fn role(&self) -> Role {
        self.role
    }
}

impl RwLock {
    /// The read side, for a guard: `Guard::acquire(&lock.reading(), &mut
    /// con, timeout)` ([`Guard`](crate::lease::Guard); or an
    /// [`AsyncGuard`](crate::lease::AsyncGuard)).
    pub fn reading(&self) -> Access {
        self.side(Role::Read)
    }

    /// The write side, for a guard: `Guard::acquire(&lock.writing(), &mut
    /// con, timeout)` ([`Guard`](crate::lease::Guard); or an
    /// [`AsyncGuard`](crate::lease::AsyncGuard)).
    pub fn writing(&self) -> Access {
        self.side(Role::Write)
    }

    /// The side of `role`.
    fn side(&self, role: Role) -> Access {
        Access {
            lock: self.clone(),
            role,
        }
    }
}

impl Resource for Access {
    type Lease = RwLease;

    fn leased(&self) -> &Leased {
        &self.lock.leased
    }

    fn attempts(&self) -> impl FnMut(&str, i64) -> Op<Attempt<RwLease>> + Send + 'static {
        let (lock, role) = (self.lock.clone(), self.role);
        move |token, place_ms| lock.attempt(role, token, place_ms)
    }

    fn release_by(&self, token: &str) -> Op<Option<bool>> {
        self.lock.release_as(self.role, token)
    }

    fn extend(&self, lease: &RwLease, duration: Duration) -> Op<bool> {
        self.lock.extend(lease, duration)
    }

    fn release(&self, lease: &RwLease) -> Op<Option<bool>> {
        self.lock.release(lease)
    }

    fn token(lease: &RwLease) -> &str {
        &lease.token
    }
}
