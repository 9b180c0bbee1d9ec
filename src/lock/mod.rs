//! An owner-token lock with fencing tokens, woken waiters, renewal and
//! replica-acknowledged fencing (`lua/lock/`).
//!
//! A lock that is taken with `SET key 1 EX t NX` and released with an
//! unconditional `EXPIRE key 0` (the PHP recipe our users come from) deletes
//! a lock someone else holds once the first lease has run out. Here every
//! acquire stores an unguessable 128-bit token; release and extend compare
//! the token and act in one script, so only the owner can do either. Every
//! successful acquire also returns a fencing token that is strictly greater
//! than any earlier one of the same lock, so a protected resource can refuse
//! writes from a stale owner.
//!
//! * **Waiting** ([`Lock::acquire`]): a waiter is woken by the release (a
//!   message on the lock's shard channel, published by the release script
//!   in the lock's slot), and otherwise sleeps until the holder's remaining
//!   lease has run out; no polling ([`WaitMode`]; [`WaitMode::Polling`]
//!   keeps the old 50 ms retries).
//! * **Renewal**: the [`lease`](crate::lease) guards,
//!   [`Guard`](crate::lease::Guard) (sync, a thread) and
//!   [`AsyncGuard`](crate::lease::AsyncGuard) / [`Lock::with_lock`]
//!   (async, a tokio task), renew
//!   the lease every lease/3 while the lock is held and tell the holder
//!   when it was lost ([`Lost`](crate::lease::Lost)).
//! * **Retries**: [`Lock::try_acquire_as`] / [`Lock::acquire_as`] with the
//!   caller's own token return the same fencing token (and a fresh lease)
//!   when an earlier attempt with that token did take the lock, so an
//!   acquire whose reply was lost can be sent again.
//! * **Failover** ([`Replication`]): an acquire that waits for replicas
//!   (`WAIT`) hands out a fencing token only once replicas have it.
//!
//! # Fencing tokens and the clock
//!
//! A fencing token is `max(last + 1, now)`, where `last` is the lock's
//! previous token (its `:fence` key) and `now` the lock primary's clock in
//! unix microseconds (`TIME`). Redis replicates asynchronously, so after a
//! failover the promoted replica may have missed the last increments (or
//! the old primary, frozen and resumed, may hand out a token before it
//! learns it was replaced): a counter alone would then hand out the same
//! tokens again. The clock does not go back with the data: a token handed
//! out after the failover is greater than every token handed out before
//! it, **as long as the nodes' clocks differ by less than the failover
//! takes** (at least `cluster-node-timeout`: 15 s by default; keep the
//! nodes' clocks synchronised, e.g. with NTP, well within that). A replica
//! whose clock runs behind by more can hand out smaller tokens until its
//! clock catches up with the last token it missed (`tests/lock.rs` shows
//! both). A token is never smaller than the previous one of the same
//! primary, whatever the clocks do; a lock that holds an older counter
//! (below the clock) simply jumps to the clock at its next acquire. The
//! tokens stay below 2^53, so every client language holds them exactly.
//! [`Replication::Acknowledged`] adds a `WAIT`, which also makes the lease
//! itself survive a failover to an acknowledging replica (else
//! `ErrorKind::NotReplicated`); [`Replication::Auto`] uses 1 replica and
//! 1 s when the lock's primary has replicas. `tests/failover.rs` checks the
//! fencing tokens across failovers with and without it.
//!
//! # Waiting
//!
//! The release script publishes on the shard channel `<prefix>{<name>}:wake`,
//! which shares the lock's hash slot (`SPUBLISH` from the script: on a
//! cluster a script may publish only there, and the release refuses a
//! channel without the key's hash tag before it writes). A refused waiter
//! subscribes (`SSUBSCRIBE` on the node that serves the slot), tries once
//! more (a release between its attempt and its subscription is not
//! missed), then sleeps until the message or the holder's remaining lease,
//! whichever comes first: no polling, and a lost message (the subscription
//! dropped, a release that published nothing, a crashed holder) costs at
//! most the holder's remaining lease, never a hang.
//!
//! Pub/sub rather than a blocking list: a release with no waiters costs
//! nothing and leaves nothing behind, every waiter of that lock (and only of
//! that lock) hears it, and a waiter needs no connection of its own per wait
//! (the sync `Connection` keeps one RESP3 subscription connection per node;
//! the async one a hub shared by its clones). A waiter that may not
//! subscribe (an ACL without the channel rule) still gets the lock, by
//! sleeping out each wait; `con.wait_stats()` says so: how many waits a
//! message woke, how many timed out, how many could not subscribe and the
//! server's last refusal.
//!
//! # Renewal
//!
//! [`Guard::acquire`](crate::lease::Guard::acquire) (sync: a thread with
//! its own connection, `Connection::try_clone`) and
//! [`AsyncGuard::acquire`](crate::lease::AsyncGuard::acquire) /
//! [`Lock::with_lock`] (async: a tokio task) extend the lease every lease/3
//! while held, stop when dropped or released, never renew a lock their
//! token no longer owns, and flag the loss (`lost()` gives [`Lost`](crate::lease::Lost),
//! `check()` the error `ErrorKind::LockLost`, `Held::lost_signal()` a
//! future to race a critical section against).
//!
//! # Keys
//!
//! `<prefix>{<name>}` holds the token with the lease as TTL, and
//! `<prefix>{<name>}:fence` the last fencing token (never expires); the
//! wake-up channel is `<prefix>{<name>}:wake`. All share the hash tag
//! `{<name>}`. The default prefix is [`Lock::DEFAULT_PREFIX`], `redis:lock:`.
//!
//! Every operation is an [`Op`]: run it with `.run(&mut con)` on a
//! [`Connection`](crate::Connection) or `.run_async(&con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::lease::Guard;
//! use redis_patterns::lock::Lock;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let lock = Lock::new("orders:42", Duration::from_secs(5))?;
//! let lease = lock.acquire(Duration::from_secs(1)).run(&mut con)?; // woken by the release
//! // ... pass lease.fence to the resource you protect ...
//! lock.release(&lease.token).run(&mut con)?;
//! {
//!     let guard = Guard::acquire(&lock, &mut con, Duration::from_secs(1))?; // renewed every lease/3
//!     guard.check()?; // Err(LockLost) once the lease was lost
//! } // released here, only if we still own it
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let lock = Lock::new("orders:42", Duration::from_secs(5))?;
//! let con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let lease = lock.try_acquire().run_async(&con).await?;
//! lock.release(&lease.token).run_async(&con).await?;
//! let fence = lock
//!     .with_lock(&con, Duration::from_secs(1), |held| async move { held.fence() })
//!     .await?;
//! # Ok(())
//! # }
//! ```

mod contract;
#[cfg(feature = "tokio")]
mod guards;
mod replication;
mod status;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;

use crate::core::{Batch, Op, setters};
use crate::error::{Error, ErrorKind, Result};
use crate::lease::leasing::{self, Leased, Leasing, leased_accessors, leasing_setters};
use crate::lease::wait::Attempt;
use crate::lease::{Resource, WaitMode, new_token};
use crate::scripts;

pub(crate) use contract::contract;
pub use replication::Replication;
pub use status::LockStatus;

/// The value of [`Lock::DEFAULT_PREFIX`].
pub(crate) const DEFAULT_PREFIX: &str = "redis:lock:";

/// The longest lease the scripts accept (15 decimal digits of milliseconds;
/// the `lease_ms` range of `lua/lock/acquire.lua`'s header).
pub(crate) const MAX_LEASE_MS: u64 = scripts::lock::ACQUIRE_LEASE_MS_MAX as u64;

/// The value of [`Lock::DEFAULT_POLL_INTERVAL`].
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(50);

impl Lock {
    /// The default key prefix (the PHP recipe's `redis:lock:`).
    pub const DEFAULT_PREFIX: &'static str = DEFAULT_PREFIX;

    /// The default poll interval of [`WaitMode::Polling`].
    pub const DEFAULT_POLL_INTERVAL: Duration = DEFAULT_POLL_INTERVAL;

    /// A fresh unguessable 128-bit owner token, as 32 lowercase hex digits:
    /// what [`Lock::acquire`] takes the lock with, for a caller that wants
    /// to know its token before it sends ([`Lock::acquire_as`], and the
    /// `_as` acquires of the [semaphore](crate::semaphore::Semaphore::acquire_as)
    /// and the [read-write lock](crate::rwlock::RwLock::wait_as)).
    pub fn new_token() -> String {
        new_token()
    }
}

/// A named lock: its keys, lease, wait mode and replication. Cheap to
/// clone; holds no connection.
#[derive(Debug, Clone)]
pub struct Lock {
    leased: Leased,
    fence_key: String,
    replication: Replication,
}

/// Builds a [`Lock`]: setters never fail, [`LockBuilder::build`] checks.
#[derive(Debug, Clone)]
pub struct LockBuilder {
    leasing: Leasing,
    replication: Replication,
}

/// Proof of ownership returned by a successful acquire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lease {
    /// The owner token stored in the lock key (32 lowercase hex digits, or
    /// the caller's own with [`Lock::try_acquire_as`]).
    pub token: String,
    /// The fencing token: greater than that of every earlier acquire (also
    /// across a failover, see [the module docs](self#fencing-tokens-and-the-clock)).
    pub fence: u64,
}

impl LockBuilder {
    leasing_setters!(Lock, "The lease every acquire asks for (default 30 s).");

    setters! {
        /// Whether acquires wait for replicas (default [`Replication::None`]).
        replication(replication: Replication) => replication;

        /// Whether the lock goes to its waiters in arrival order (default
        /// `false`), as Redisson's `RFairLock`: an acquire behind a live
        /// waiter waits for it even when the lock is free; a waiter that
        /// disappeared is skipped once its place (by default a third of the lease, see `place`) has ended.
        /// Without it whoever comes first takes a free lock; either way a
        /// release wakes only the next waiter.
        fair(fair: bool) => leasing.fair;
    }

    /// Checks the settings.
    pub fn build(self) -> Result<Lock> {
        let leased = self.leasing.check("lock name", MAX_LEASE_MS)?;
        if let Replication::Acknowledged { replicas, timeout } = self.replication {
            if replicas == 0 {
                return Err(Error::invalid("replicas", "must be at least 1"));
            }
            if timeout.is_zero() {
                return Err(Error::invalid(
                    "replication timeout",
                    "must be greater than zero",
                ));
            }
        }
        Ok(Lock {
            fence_key: format!("{}:fence", leased.key),
            leased,
            replication: self.replication,
        })
    }
}

impl Lock {
    /// A builder for the lock named `name`.
    pub fn builder(name: &str) -> LockBuilder {
        LockBuilder {
            leasing: Leasing::new(name, DEFAULT_PREFIX),
            replication: Replication::None,
        }
    }

    /// A lock named `name` (keys `redis:lock:{name}` and
    /// `redis:lock:{name}:fence`) with the given lease, notified waiting
    /// and no replica acknowledgement.
    pub fn new(name: &str, lease: Duration) -> Result<Self> {
        Self::builder(name).lease(lease).build()
    }

    /// The key holding the owner token.
    pub fn key(&self) -> &str {
        &self.leased.key
    }

    /// The key of the fencing counter.
    pub fn fence_key(&self) -> &str {
        &self.fence_key
    }

    leased_accessors!(
        "The lease every acquire asks for.",
        "Whether the lock goes to its waiters in arrival order."
    );

    /// One attempt with a fresh token: the lease, or
    /// [`ErrorKind::LockBusy`] when someone holds it. Cancel-safe (see
    /// [`Lock::try_acquire_as`]).
    pub fn try_acquire(&self) -> Op<Lease> {
        self.try_acquire_as(&new_token())
    }

    /// One attempt with the caller's own `token`. When the lock is already
    /// held with `token` (an earlier attempt whose reply was lost did take
    /// it), returns the same fencing token, with a fresh lease.
    ///
    /// Cancel-safe: dropped at any await (`tokio::time::timeout`,
    /// `select!`, an aborted task), it leaves nothing held: a spawned task
    /// releases by `token` whatever the attempt may have taken (see
    /// [the cancellation guide](crate::guide::cancellation)).
    /// A dropped attempt with a token that already held the lock releases
    /// it too.
    pub fn try_acquire_as(&self, token: &str) -> Op<Lease> {
        leasing::try_once(self, token, |key, retry_after_ms| ErrorKind::LockBusy {
            key,
            retry_after_ms,
        })
    }

    /// Waits until it gets the lock (see [`WaitMode`]) or `timeout` has
    /// passed ([`ErrorKind::LockTimeout`]), with a fresh token. A zero
    /// timeout makes exactly one attempt.
    ///
    /// Cancel-safe: dropped at any await (a `tokio::time::timeout` shorter
    /// than `timeout`, a `select!` branch that lost, an aborted task), it
    /// leaves neither the lock nor a subscription behind: a spawned task
    /// releases by the acquire's token whatever it may have taken, and the
    /// wait's subscription is left (see
    /// [the cancellation guide](crate::guide::cancellation)).
    pub fn acquire(&self, timeout: Duration) -> Op<Lease> {
        self.acquire_as(&new_token(), timeout)
    }

    /// [`Lock::acquire`] with the caller's own token (see
    /// [`Lock::try_acquire_as`]). Cancel-safe as [`Lock::acquire`]: a
    /// dropped acquire releases by `token` (also a lock `token` held
    /// before).
    pub fn acquire_as(&self, token: &str, timeout: Duration) -> Op<Lease> {
        leasing::wait_for(self, token, timeout)
    }

    /// One acquire script call, with `WAIT` as [`Replication`] says; a
    /// refused one keeps a place in the queue for `place_ms` (0: none).
    fn attempt(
        &self,
        token: &str,
        place_ms: i64,
        plan: Arc<OnceLock<Option<(u32, Duration)>>>,
    ) -> Op<Attempt<Lease>> {
        let waits = match self.replication {
            Replication::None => None,
            Replication::Acknowledged { replicas, timeout } => Some((replicas, timeout)),
            Replication::Auto => match plan.get() {
                Some(known) => *known,
                None => {
                    // The primary of the lock's slot: INFO with the key's slot.
                    let lock = self.clone();
                    let token = token.to_string();
                    let mut info = redis::cmd("INFO");
                    info.arg("replication");
                    return Op::<String>::cmd(&self.leased.key, info).and_then(move |info| {
                        let known = match replication::connected_replicas(&info) {
                            0 => None,
                            _ => match Replication::DEFAULT_ACKNOWLEDGED {
                                Replication::Acknowledged { replicas, timeout } => {
                                    Some((replicas, timeout))
                                }
                                _ => unreachable!("the default is acknowledged"),
                            },
                        };
                        let _ = plan.set(known);
                        lock.attempt(&token, place_ms, plan)
                    });
                }
            },
        };
        // No now_us: the token is taken from the server's clock.
        let l = &self.leased;
        let call = scripts::lock::acquire(
            &l.key,
            &self.fence_key,
            &l.queue,
            &l.places,
            token,
            l.lease_ms,
            place_ms,
            l.fair,
            &[],
        );
        let token = token.to_string();
        let Some((replicas, timeout)) = waits else {
            return Op::script(call).map(move |reply| decode_acquire(reply, token));
        };
        // WAIT right after the script, in the same pipeline to the same node:
        // it counts the replicas that have this connection's writes so far.
        let mut batch = Batch::new();
        batch.script(call);
        batch.add_repeatable(&self.leased.key, replication::wait_cmd(replicas, timeout));
        let lock = self.clone();
        Op::send(batch, |mut r| Ok((r.take::<i64>()?, r.take::<i64>()?))).and_then(
            move |(reply, acked)| match decode_acquire(reply, token) {
                Attempt::Got(lease) if acked < i64::from(replicas) => {
                    let failed = ErrorKind::NotReplicated {
                        key: lock.leased.key.clone(),
                        fence: lease.fence,
                        acked: acked.max(0) as u32,
                        wanted: replicas,
                    };
                    // Its token is never used: free the lock for others now
                    // (best effort; the lease bounds it otherwise).
                    lock.release(&lease.token)
                        .map(|_| ())
                        .or_else(|_| Op::ready(()))
                        .and_then(move |_| Op::fail(failed.into()))
                }
                other => Op::ready(other),
            },
        )
    }

    /// Releases the lock if `token` still owns it, and wakes its waiters:
    /// `Some(true)`; `Some(false)` when it does not (the lease ran out,
    /// perhaps someone else holds it now — left intact);
    /// `None` when the call was sent again after its reply was lost (a
    /// broken connection, a failover) and the resend found nothing to give
    /// back: the first attempt may have released it. Either way `token`
    /// holds nothing now.
    ///
    /// Dropped at an await, the release may or may not have run (the lock
    /// then ends with its lease); it is idempotent, so run it again to be
    /// sure. A guard's release stays armed until its reply came
    /// ([`AsyncGuard::release`](crate::lease::AsyncGuard::release)).
    pub fn release(&self, token: &str) -> Op<Option<bool>> {
        let l = &self.leased;
        leasing::with_token(token, || {
            leasing::released(scripts::lock::release(
                &l.key, &l.queue, &l.places, token, &l.channel,
            ))
        })
    }

    /// Gives the owner a fresh lease of `lease` from now; `false` when
    /// `token` does not own the lock. Dropped at an await, it may or may
    /// not have extended the lease, and leaves nothing else behind.
    pub fn extend(&self, token: &str, lease: Duration) -> Op<bool> {
        leasing::held(
            leasing::extend_ms(token, lease, MAX_LEASE_MS)
                .and_then(|ms| scripts::lock::extend(&self.leased.key, token, ms)),
        )
    }

    /// The remaining lease of `token`, or `None` when it does not own the lock
    /// (read-only: `EVALSHA_RO`, so it also runs on replicas).
    pub fn owned(&self, token: &str) -> Op<Option<Duration>> {
        leasing::with_token(token, || {
            Op::script(scripts::lock::owned(&self.leased.key, token)).map(|reply| match reply {
                0 => None,
                ms if ms > 0 => Some(Duration::from_millis(ms as u64)),
                _ => Some(Duration::MAX),
            })
        })
    }
}

impl Resource for Lock {
    type Lease = Lease;

    fn leased(&self) -> &Leased {
        &self.leased
    }

    fn attempts(&self) -> impl FnMut(&str, i64) -> Op<Attempt<Lease>> + Send + 'static {
        let lock = self.clone();
        // Auto replication asks INFO replication once per acquire.
        let plan = Arc::new(OnceLock::new());
        move |token, place_ms| lock.attempt(token, place_ms, plan.clone())
    }

    fn release_by(&self, token: &str) -> Op<Option<bool>> {
        self.release(token)
    }

    fn extend(&self, lease: &Lease, duration: Duration) -> Op<bool> {
        Lock::extend(self, &lease.token, duration)
    }

    fn token(lease: &Lease) -> &str {
        &lease.token
    }

    fn fence(lease: &Lease) -> u64 {
        lease.fence
    }
}

/// An acquire script's reply: the fencing token, or busy.
fn decode_acquire(reply: i64, token: String) -> Attempt<Lease> {
    if reply > 0 {
        Attempt::Got(Lease {
            token,
            fence: reply as u64,
        })
    } else {
        Attempt::busy(reply)
    }
}
