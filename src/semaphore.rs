//! A semaphore with expiring permits (`lua/semaphore/`): at most `limit`
//! holders of a named resource at once, each with its own lease.
//!
//! The permits are one sorted set, `<prefix>{<name>}`: member the holder's
//! token, score the end of its lease on the server's clock (`TIME`, so
//! clients' clocks do not matter). Every acquire first drops the permits
//! whose lease has ended, so a holder that crashed frees its permit at the
//! end of its lease; the set itself expires with its longest lease. One
//! script per operation (acquire, release, extend), one key, so it runs
//! unchanged on Redis Cluster. A blocking acquire is woken by a release (a
//! message on the shard channel `<prefix>{<name>}:wake`, published by the
//! release script) or, at the latest, when the first lease ends
//! ([`WaitMode`]).
//!
//! Every client of one semaphore must use the same `limit`: it is an
//! argument of each acquire, not stored.
//!
//! A permit held while its holder works is best held by a guard
//! ([`Guard`](crate::lease::Guard) sync,
//! [`AsyncGuard`](crate::lease::AsyncGuard) async, both
//! `::acquire(&semaphore, con, timeout)`; see [`lease`](crate::lease)): it
//! renews the permit every lease/3, reports its loss, and gives it back
//! when dropped.
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::semaphore::Semaphore;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let exports = Semaphore::new("exports", 4, Duration::from_secs(60))?; // 4 at once
//! let permit = exports.acquire(Duration::from_secs(5)).run(&mut con)?;
//! // ... the work; exports.extend(&permit.token, ..) for a longer one ...
//! exports.release(&permit.token).run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let exports = Semaphore::new("exports", 4, Duration::from_secs(60))?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let permit = exports.try_acquire().run_async(&con).await?; // Err(NoPermit) when all are taken
//! exports.release(&permit.token).run_async(&con).await?;
//! # Ok(())
//! # }
//! ```

mod contract;

use std::time::Duration;

use serde::Serialize;

use crate::core::{Op, setters};
use crate::error::{Error, ErrorKind, Result};
use crate::lease::leasing::{self, Leased, Leasing, leased_accessors, leasing_setters};
use crate::lease::wait::Attempt;
use crate::lease::{Resource, WaitMode, new_token};
use crate::scripts;

pub(crate) use contract::contract;

/// The value of [`Semaphore::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "redis:semaphore:";

impl Semaphore {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;
}

/// The most holders a semaphore allows (the `limit` range of
/// `lua/semaphore/acquire.lua`'s header).
pub(crate) const MAX_LIMIT: u32 = scripts::semaphore::ACQUIRE_LIMIT_MAX as u32;

/// The longest lease of a permit (the `lease_ms` range of the header).
pub(crate) const MAX_LEASE_MS: u64 = scripts::semaphore::ACQUIRE_LEASE_MS_MAX as u64;

/// A named semaphore: its key, limit, lease and wait mode. Cheap to clone;
/// holds no connection.
#[derive(Debug, Clone)]
pub struct Semaphore {
    leased: Leased,
    limit: u32,
}

/// Builds a [`Semaphore`]: setters never fail, [`SemaphoreBuilder::build`]
/// checks.
#[derive(Debug, Clone)]
pub struct SemaphoreBuilder {
    leasing: Leasing,
    limit: u32,
}

/// A permit: the holder's token (release and extend take it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Permit {
    /// 32 lowercase hex digits, or the caller's own with
    /// [`Semaphore::try_acquire_as`].
    pub token: String,
}

impl SemaphoreBuilder {
    leasing_setters!(Semaphore, "The lease of every permit (default 30 s).");

    setters! {
        /// Whether free permits go to the waiters in arrival order (default
        /// `false`): an acquire with as many live waiters ahead of it as
        /// permits are free waits for them, as Redisson's fair locks do; a
        /// waiter that disappeared is skipped once its place (a third of the lease by default)
        /// has ended. Without it whoever comes first takes a free permit;
        /// either way a release wakes one waiter per free permit.
        fair(fair: bool) => leasing.fair;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<Semaphore> {
        let leased = self.leasing.check("semaphore name", MAX_LEASE_MS)?;
        if self.limit == 0 || self.limit > MAX_LIMIT {
            return Err(Error::invalid(
                "limit",
                format!("must be from 1 to {MAX_LIMIT}"),
            ));
        }
        Ok(Semaphore {
            leased,
            limit: self.limit,
        })
    }
}

impl Semaphore {
    /// A builder for the semaphore `name` with `limit` permits.
    pub fn builder(name: &str, limit: u32) -> SemaphoreBuilder {
        SemaphoreBuilder {
            leasing: Leasing::new(name, DEFAULT_PREFIX),
            limit,
        }
    }

    /// The semaphore `name` (key `redis:semaphore:{name}`) with `limit`
    /// permits of `lease` each and notified waiting.
    pub fn new(name: &str, limit: u32, lease: Duration) -> Result<Self> {
        Self::builder(name, limit).lease(lease).build()
    }

    /// The key of the permits (a sorted set).
    pub fn key(&self) -> &str {
        &self.leased.key
    }

    /// How many holders it allows at once.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    leased_accessors!(
        "The lease of every permit.",
        "Whether free permits go to the waiters in arrival order."
    );

    /// One attempt with a fresh token: the permit, or
    /// [`ErrorKind::NoPermit`] when every permit is taken. Cancel-safe (see
    /// [`Semaphore::try_acquire_as`]).
    pub fn try_acquire(&self) -> Op<Permit> {
        self.try_acquire_as(&new_token())
    }

    /// One attempt with the caller's own `token`; a token that already
    /// holds a permit (a retry whose reply was lost) keeps it, with a fresh
    /// lease.
    ///
    /// Cancel-safe: dropped at any await (`tokio::time::timeout`,
    /// `select!`, an aborted task), it leaves no permit taken: a spawned task
    /// releases by `token` whatever the attempt may have taken (see
    /// [the cancellation guide](crate::guide::cancellation)).
    pub fn try_acquire_as(&self, token: &str) -> Op<Permit> {
        leasing::try_once(self, token, |key, retry_after_ms| ErrorKind::NoPermit {
            key,
            retry_after_ms,
        })
    }

    /// Waits for a permit (woken by a release, or when the first lease
    /// ends) until `timeout` ([`ErrorKind::LockTimeout`]); a zero timeout
    /// makes exactly one attempt.
    ///
    /// Cancel-safe: dropped at any await, it leaves neither a permit nor a
    /// subscription behind (a spawned task releases by the acquire's token
    /// whatever it may have taken; see
    /// [the cancellation guide](crate::guide::cancellation)).
    pub fn acquire(&self, timeout: Duration) -> Op<Permit> {
        self.acquire_as(&new_token(), timeout)
    }

    /// [`Semaphore::acquire`] with the caller's own token (cancel-safe
    /// likewise: a dropped acquire releases by `token`).
    pub fn acquire_as(&self, token: &str, timeout: Duration) -> Op<Permit> {
        leasing::wait_for(self, token, timeout)
    }

    /// One acquire call; a refused one keeps a place in the queue for
    /// `place_ms` (0: none).
    fn attempt(&self, token: &str, place_ms: i64) -> Op<Attempt<Permit>> {
        let token = token.to_string();
        let l = &self.leased;
        Op::script(scripts::semaphore::acquire(
            &l.key,
            &l.queue,
            &l.places,
            &token,
            i64::from(self.limit),
            l.lease_ms,
            place_ms,
            l.fair,
        ))
        .map(move |reply| match reply {
            1 => Attempt::Got(Permit { token }),
            r => Attempt::busy(r),
        })
    }

    /// Gives the permit of `token` back and wakes the waiters:
    /// `Some(true)`; `Some(false)` when it held none (its lease had ended:
    /// the permit was free already);
    /// `None` when the call was sent again after its reply was lost (a
    /// broken connection, a failover) and the resend found nothing to give
    /// back: the first attempt may have given it back. Either way `token`
    /// holds nothing now. Dropped at an await, it may or may not have run
    /// (the permit then ends with its lease); run it again to be sure.
    pub fn release(&self, token: &str) -> Op<Option<bool>> {
        let (l, limit) = (&self.leased, i64::from(self.limit));
        leasing::with_token(token, || {
            leasing::released(scripts::semaphore::release(
                &l.key, &l.queue, &l.places, token, limit, &l.channel,
            ))
        })
    }

    /// Gives the permit of `token` a fresh lease of `lease` from now;
    /// `false` when it holds no live permit. Dropped at an await, it may or
    /// may not have extended the lease, and leaves nothing else behind.
    pub fn extend(&self, token: &str, lease: Duration) -> Op<bool> {
        let max = scripts::semaphore::EXTEND_LEASE_MS_MAX as u64;
        leasing::held(
            leasing::extend_ms(token, lease, max)
                .and_then(|ms| scripts::semaphore::extend(&self.leased.key, token, ms)),
        )
    }
}

impl Resource for Semaphore {
    type Lease = Permit;

    fn leased(&self) -> &Leased {
        &self.leased
    }

    fn attempts(&self) -> impl FnMut(&str, i64) -> Op<Attempt<Permit>> + Send + 'static {
        let sem = self.clone();
        move |token, place_ms| sem.attempt(token, place_ms)
    }

    fn release_by(&self, token: &str) -> Op<Option<bool>> {
        self.release(token)
    }

    fn extend(&self, permit: &Permit, duration: Duration) -> Op<bool> {
        Semaphore::extend(self, &permit.token, duration)
    }

    fn token(permit: &Permit) -> &str {
        &permit.token
    }
}
