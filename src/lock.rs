//! An owner-token lock with fencing tokens (`lua/lock/`).
//!
//! The seed's lock (`SET key 1 EX t NX`, released by an unconditional
//! `EXPIRE key 0`) deletes a lock someone else holds once the first lease has
//! run out. Here every acquire stores an unguessable 128-bit token; release
//! and extend compare the token and act in one script, so only the owner can
//! do either. Every successful acquire also returns a fencing token that is
//! strictly greater than any earlier one of the same lock, so a protected
//! resource can refuse writes from a stale owner.
//!
//! Keys: `<prefix>{<name>}` holds the token with the lease as TTL, and
//! `<prefix>{<name>}:fence` counts acquisitions (never expires). Both share the
//! hash tag `{<name>}`. The default prefix is the seed's `redis:lock:`.

use std::time::{Duration, Instant};

use redis::ConnectionLike;

use crate::error::{Error, ErrorKind, Result};
use crate::keys;
use crate::scripts;

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

/// Proof of ownership returned by a successful acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    random_bytes::<16>()
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

impl Lock {
    /// A lock named `name` (keys `redis:lock:{name}` and `redis:lock:{name}:fence`)
    /// with the given lease and a 50 ms retry interval.
    pub fn new(name: &str, lease: Duration) -> Result<Self> {
        Self::with_prefix("redis:lock:", name, lease)
    }

    /// Like [`Lock::new`] with another key prefix.
    pub fn with_prefix(prefix: &str, name: &str, lease: Duration) -> Result<Self> {
        keys::check_name("lock name", name)?;
        keys::check_prefix(prefix)?;
        let key = keys::tagged(prefix, name);
        Ok(Self {
            fence_key: format!("{key}:fence"),
            key,
            lease_ms: lease_ms("lease", lease)?,
            retry: Duration::from_millis(50),
        })
    }

    /// Sets the mean interval between attempts of a blocking acquire; each
    /// wait is drawn uniformly from half to one and a half times it.
    pub fn retry_interval(mut self, interval: Duration) -> Result<Self> {
        if interval.is_zero() {
            return Err(Error::invalid(
                "retry interval",
                "must be greater than zero",
            ));
        }
        self.retry = interval;
        Ok(self)
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

    fn acquire_call(&self, token: &str) -> Result<crate::ScriptCall<i64>> {
        scripts::lock::acquire(&self.key, &self.fence_key, token, self.lease_ms)
    }

    fn outcome(&self, token: String, reply: i64) -> Result<Lease> {
        if reply > 0 {
            Ok(Lease {
                token,
                fence: reply as u64,
            })
        } else {
            Err(Error::from(ErrorKind::LockBusy {
                key: self.key.clone(),
                retry_after_ms: (reply < 0).then_some(reply.unsigned_abs()),
            }))
        }
    }

    /// One attempt: the lease, or [`ErrorKind::LockBusy`] when someone holds it.
    pub fn try_acquire(&self, con: &mut dyn ConnectionLike) -> Result<Lease> {
        let token = new_token();
        let reply = self.acquire_call(&token)?.invoke(con)?;
        self.outcome(token, reply)
    }

    /// Async twin of [`Lock::try_acquire`].
    pub async fn try_acquire_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
    ) -> Result<Lease> {
        let token = new_token();
        let reply = self.acquire_call(&token)?.invoke_async(con).await?;
        self.outcome(token, reply)
    }

    /// The pause before the next attempt, or the timeout error when the
    /// deadline has passed.
    fn next_wait(&self, started: Instant, timeout: Duration) -> Result<Duration> {
        let waited = started.elapsed();
        if waited >= timeout {
            return Err(Error::from(ErrorKind::LockTimeout {
                key: self.key.clone(),
                waited_ms: waited.as_millis() as u64,
            }));
        }
        let r = u32::from_le_bytes(random_bytes::<4>());
        let jittered = self.retry.mul_f64(0.5 + r as f64 / (u32::MAX as f64 + 1.0));
        Ok(jittered.min(timeout - waited))
    }

    /// Tries until it gets the lock or `timeout` has passed
    /// ([`ErrorKind::LockTimeout`]). A zero timeout makes exactly one attempt.
    pub fn acquire(&self, con: &mut dyn ConnectionLike, timeout: Duration) -> Result<Lease> {
        let started = Instant::now();
        loop {
            match self.try_acquire(con) {
                Err(e) if e.is_busy() => std::thread::sleep(self.next_wait(started, timeout)?),
                other => return other,
            }
        }
    }

    /// Async twin of [`Lock::acquire`] (sleeps with `tokio::time::sleep`).
    pub async fn acquire_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        timeout: Duration,
    ) -> Result<Lease> {
        let started = Instant::now();
        loop {
            match self.try_acquire_async(con).await {
                Err(e) if e.is_busy() => {
                    tokio::time::sleep(self.next_wait(started, timeout)?).await
                }
                other => return other,
            }
        }
    }

    /// Releases the lock if `token` still owns it; `Ok(false)` when it does not
    /// (the lease ran out, perhaps someone else holds it now — left intact).
    pub fn release(&self, con: &mut dyn ConnectionLike, token: &str) -> Result<bool> {
        check_token(token)?;
        Ok(scripts::lock::release(&self.key, token)?.invoke(con)? == 1)
    }

    /// Async twin of [`Lock::release`].
    pub async fn release_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        token: &str,
    ) -> Result<bool> {
        check_token(token)?;
        Ok(scripts::lock::release(&self.key, token)?
            .invoke_async(con)
            .await?
            == 1)
    }

    /// Gives the owner a fresh lease of `lease` from now; `Ok(false)` when
    /// `token` does not own the lock.
    pub fn extend(
        &self,
        con: &mut dyn ConnectionLike,
        token: &str,
        lease: Duration,
    ) -> Result<bool> {
        check_token(token)?;
        let ms = lease_ms("lease", lease)?;
        Ok(scripts::lock::extend(&self.key, token, ms)?.invoke(con)? == 1)
    }

    /// Async twin of [`Lock::extend`].
    pub async fn extend_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        token: &str,
        lease: Duration,
    ) -> Result<bool> {
        check_token(token)?;
        let ms = lease_ms("lease", lease)?;
        Ok(scripts::lock::extend(&self.key, token, ms)?
            .invoke_async(con)
            .await?
            == 1)
    }

    /// The remaining lease of `token`, or `None` when it does not own the lock
    /// (read-only: `EVALSHA_RO`, so it also runs on replicas).
    pub fn owned(&self, con: &mut dyn ConnectionLike, token: &str) -> Result<Option<Duration>> {
        check_token(token)?;
        let reply = scripts::lock::owned(&self.key, token)?.invoke(con)?;
        Ok(match reply {
            0 => None,
            ms if ms > 0 => Some(Duration::from_millis(ms as u64)),
            _ => Some(Duration::MAX),
        })
    }

    /// Blocking acquire that returns a guard releasing the lock when dropped.
    /// The guard borrows the connection; use [`LockGuard::conn`] meanwhile.
    pub fn lock<'a, C: ConnectionLike>(
        &'a self,
        con: &'a mut C,
        timeout: Duration,
    ) -> Result<LockGuard<'a, C>> {
        let lease = self.acquire(con, timeout)?;
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
pub struct LockGuard<'a, C: ConnectionLike> {
    lock: &'a Lock,
    con: &'a mut C,
    lease: Option<Lease>,
}

impl<C: ConnectionLike> LockGuard<'_, C> {
    /// The connection, for work under the lock.
    pub fn conn(&mut self) -> &mut C {
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

    /// Renews the lease; `Ok(false)` when the lock was lost meanwhile.
    pub fn extend(&mut self, lease: Duration) -> Result<bool> {
        let token = self.token().to_string();
        self.lock.extend(self.con, &token, lease)
    }

    /// Releases now and reports whether this owner still held the lock.
    pub fn release(mut self) -> Result<bool> {
        let lease = self
            .lease
            .take()
            .expect("a guard holds its lease until released");
        self.lock.release(self.con, &lease.token)
    }
}

impl<C: ConnectionLike> Drop for LockGuard<'_, C> {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            let _ = self.lock.release(self.con, &lease.token);
        }
    }
}
