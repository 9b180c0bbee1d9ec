//! An owner-token lock with fencing tokens (`lua/lock/`).
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
//! Keys: `<prefix>{<name>}` holds the token with the lease as TTL, and
//! `<prefix>{<name>}:fence` counts acquisitions (never expires). Both share the
//! hash tag `{<name>}`. The default prefix is [`DEFAULT_PREFIX`].
//!
//! Every operation is an [`Op`]: run it with `.run(&mut con)` on a
//! [`Connection`] or `.run_async(&mut con).await` on an
//! [`AsyncConnection`](crate::AsyncConnection).
//!
//! ```no_run
//! use std::time::Duration;
//! use redis_patterns::prelude::*;
//! use redis_patterns::lock::Lock;
//!
//! # fn main() -> redis_patterns::Result<()> {
//! let mut con = Connection::open("redis://127.0.0.1/")?;
//! let lock = Lock::new("orders:42", Duration::from_secs(5))?;
//! let lease = lock.acquire(Duration::from_secs(1)).run(&mut con)?;
//! // ... pass lease.fence to the resource you protect ...
//! lock.release(&lease.token).run(&mut con)?;
//! # Ok(())
//! # }
//! # async fn run() -> redis_patterns::Result<()> {
//! # let lock = Lock::new("orders:42", Duration::from_secs(5))?;
//! let mut con = AsyncConnection::open("redis://127.0.0.1/").await?;
//! let lease = lock.try_acquire().run_async(&mut con).await?;
//! lock.release(&lease.token).run_async(&mut con).await?;
//! # Ok(())
//! # }
//! ```

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::core::{Connection, Op, Request};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::{self, Prefix};
use crate::scripts;

mod contract;
pub(crate) use contract::contract;

/// The default key prefix (the PHP recipe's `redis:lock:`).
pub const DEFAULT_PREFIX: &str = "redis:lock:";

/// The longest lease the scripts accept (15 decimal digits of milliseconds;
/// the `lease_ms` range of `lua/lock/acquire.lua`'s header).
pub const MAX_LEASE_MS: u64 = scripts::lock::ACQUIRE_LEASE_MS_MAX as u64;

/// A named lock: its keys, lease and retry policy. Cheap to clone; holds no
/// connection.
#[derive(Debug, Clone)]
pub struct Lock {
    key: String,
    fence_key: String,
    lease_ms: i64,
    retry: Duration,
}

/// Builds a [`Lock`]: setters never fail, [`LockBuilder::build`] checks.
#[derive(Debug, Clone)]
pub struct LockBuilder {
    name: String,
    prefix: Prefix,
    lease: Duration,
    retry: Duration,
}

/// Proof of ownership returned by a successful acquire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lease {
    /// The owner token stored in the lock key (32 lowercase hex digits).
    pub token: String,
    /// The fencing token: greater than that of every earlier acquire.
    pub fence: u64,
}

fn lease_ms(what: &'static str, lease: Duration) -> Result<i64> {
    let ms = lease.as_millis();
    if ms == 0 {
        return Err(Error::invalid(what, "must be at least 1 ms"));
    }
    if ms > MAX_LEASE_MS as u128 {
        return Err(Error::invalid(
            what,
            format!("must be at most {MAX_LEASE_MS} ms"),
        ));
    }
    Ok(ms as i64)
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // The OS random source failing is not recoverable for a lock: a
    // predictable token would let others release our lock.
    getrandom::fill(&mut buf).expect("the operating system's random source is unavailable");
    buf
}

/// A fresh unguessable 128-bit owner token, as 32 lowercase hex digits.
pub fn new_token() -> String {
    random_bytes::<{ contract::TOKEN_BYTES }>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn check_token(token: &str) -> Result<()> {
    if token.is_empty() {
        return Err(Error::invalid("token", "must not be empty"));
    }
    Ok(())
}

impl LockBuilder {
    /// The key prefix (default [`DEFAULT_PREFIX`]).
    pub fn prefix(mut self, prefix: Prefix) -> Self {
        self.prefix = prefix;
        self
    }

    /// The lease every acquire asks for (default 30 s).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// The mean interval between attempts of a blocking acquire (default
    /// 50 ms); each wait is drawn uniformly from half to one and a half
    /// times it.
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.retry = interval;
        self
    }

    /// Checks the settings.
    pub fn build(self) -> Result<Lock> {
        keys::check_name("lock name", &self.name)?;
        if self.retry.is_zero() {
            return Err(Error::invalid(
                "retry interval",
                "must be greater than zero",
            ));
        }
        let key = self.prefix.tagged(&self.name);
        Ok(Lock {
            fence_key: format!("{key}:fence"),
            key,
            lease_ms: lease_ms("lease", self.lease)?,
            retry: self.retry,
        })
    }
}

impl Lock {
    /// A builder for the lock named `name`.
    pub fn builder(name: &str) -> LockBuilder {
        LockBuilder {
            name: name.to_string(),
            prefix: Prefix::new(DEFAULT_PREFIX).expect("the default prefix is valid"),
            lease: Duration::from_secs(30),
            retry: Duration::from_millis(50),
        }
    }

    /// A lock named `name` (keys `redis:lock:{name}` and
    /// `redis:lock:{name}:fence`) with the given lease and a 50 ms retry
    /// interval.
    pub fn new(name: &str, lease: Duration) -> Result<Self> {
        Self::builder(name).lease(lease).build()
    }

    /// The key holding the owner token.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key of the fencing counter.
    pub fn fence_key(&self) -> &str {
        &self.fence_key
    }

    /// The lease every acquire asks for.
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms as u64)
    }

    /// One attempt: the lease, or [`ErrorKind::LockBusy`] when someone
    /// holds it.
    pub fn try_acquire(&self) -> Op<Lease> {
        let token = new_token();
        let key = self.key.clone();
        Op::script(scripts::lock::acquire(
            &self.key,
            &self.fence_key,
            &token,
            self.lease_ms,
        ))
        .try_map(move |reply| {
            if reply > 0 {
                Ok(Lease {
                    token,
                    fence: reply as u64,
                })
            } else {
                Err(ErrorKind::LockBusy {
                    key,
                    retry_after_ms: (reply < 0).then_some(reply.unsigned_abs()),
                }
                .into())
            }
        })
    }

    /// The pause before the next attempt, or the timeout error when the
    /// deadline has passed.
    fn next_wait(&self, started: Instant, timeout: Duration) -> Result<Duration> {
        let waited = started.elapsed();
        if waited >= timeout {
            return Err(ErrorKind::LockTimeout {
                key: self.key.clone(),
                waited_ms: waited.as_millis() as u64,
            }
            .into());
        }
        let r = u32::from_le_bytes(random_bytes::<4>());
        let jittered = self.retry.mul_f64(0.5 + r as f64 / (u32::MAX as f64 + 1.0));
        Ok(jittered.min(timeout - waited))
    }

    /// Tries until it gets the lock or `timeout` has passed
    /// ([`ErrorKind::LockTimeout`]). A zero timeout makes exactly one attempt.
    pub fn acquire(&self, timeout: Duration) -> Op<Lease> {
        let lock = self.clone();
        let started = Instant::now();
        Op::repeat((), move |_| {
            let lock = lock.clone();
            lock.try_acquire()
                .map(ControlFlow::Break)
                .or_else(move |e| {
                    if !e.is_busy() {
                        return Op::fail(e);
                    }
                    match lock.next_wait(started, timeout) {
                        Ok(wait) => Op::sleep(wait).map(|_| ControlFlow::Continue(())),
                        Err(e) => Op::fail(e),
                    }
                })
        })
    }

    /// Releases the lock if `token` still owns it; `false` when it does not
    /// (the lease ran out, perhaps someone else holds it now — left intact).
    pub fn release(&self, token: &str) -> Op<bool> {
        if let Err(e) = check_token(token) {
            return Op::fail(e);
        }
        Op::script(scripts::lock::release(&self.key, token)).map(|r| r == 1)
    }

    /// Gives the owner a fresh lease of `lease` from now; `false` when
    /// `token` does not own the lock.
    pub fn extend(&self, token: &str, lease: Duration) -> Op<bool> {
        let ms = match check_token(token).and_then(|_| lease_ms("lease", lease)) {
            Ok(ms) => ms,
            Err(e) => return Op::fail(e),
        };
        Op::script(scripts::lock::extend(&self.key, token, ms)).map(|r| r == 1)
    }

    /// The remaining lease of `token`, or `None` when it does not own the lock
    /// (read-only: `EVALSHA_RO`, so it also runs on replicas).
    pub fn owned(&self, token: &str) -> Op<Option<Duration>> {
        if let Err(e) = check_token(token) {
            return Op::fail(e);
        }
        Op::script(scripts::lock::owned(&self.key, token)).map(|reply| match reply {
            0 => None,
            ms if ms > 0 => Some(Duration::from_millis(ms as u64)),
            _ => Some(Duration::MAX),
        })
    }

    /// Blocking acquire on a sync connection, returning a guard that releases
    /// the lock when dropped. The guard borrows the connection; use
    /// [`LockGuard::conn`] meanwhile. (On an async connection, acquire and
    /// release the [`Lease`] with [`Lock::acquire`] and [`Lock::release`].)
    pub fn guard<'a>(
        &'a self,
        con: &'a mut Connection,
        timeout: Duration,
    ) -> Result<LockGuard<'a>> {
        let lease = self.acquire(timeout).run(con)?;
        Ok(LockGuard {
            lock: self,
            con,
            lease: Some(lease),
        })
    }
}

/// Holds a lock until dropped or [released](LockGuard::release). Dropping it
/// releases the lock only if this owner still holds it; errors on drop are
/// ignored (the lease bounds how long a lost release can block others).
#[derive(Debug)]
pub struct LockGuard<'a> {
    lock: &'a Lock,
    con: &'a mut Connection,
    lease: Option<Lease>,
}

impl LockGuard<'_> {
    /// The connection, for work under the lock.
    pub fn conn(&mut self) -> &mut Connection {
        self.con
    }

    /// The fencing token of this acquire.
    pub fn fence(&self) -> u64 {
        self.lease.as_ref().map_or(0, |l| l.fence)
    }

    /// The owner token.
    pub fn token(&self) -> &str {
        self.lease.as_ref().map_or("", |l| l.token.as_str())
    }

    /// Renews the lease; `false` when the lock was lost meanwhile.
    pub fn extend(&mut self, lease: Duration) -> Result<bool> {
        let op = self.lock.extend(self.token(), lease);
        op.run(self.con)
    }

    /// Releases now and reports whether this owner still held the lock.
    pub fn release(mut self) -> Result<bool> {
        let lease = self
            .lease
            .take()
            .expect("a guard holds its lease until released");
        self.lock.release(&lease.token).run(self.con)
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            let _ = self.lock.release(&lease.token).run(self.con);
        }
    }
}
